package packs

import (
	"math/rand/v2"
	"testing"

	"github.com/go-json-experiment/json"
)

// TestFastPathAgreesWithLibrary generates schemas from the fast path's
// keyword subset and instances shaped like them, and requires the fast
// path's verdict to match the schema library's whenever it gives one.
func TestFastPathAgreesWithLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	cache := NewSchemaCache(64)
	var fastCovered, agreed int
	for i := 0; i < n; i++ {
		schema := genSchema(rng, 0)
		raw, err := json.Marshal(schema, json.Deterministic(true))
		if err != nil {
			t.Fatal(err)
		}
		cs, _, err := cache.compile(raw)
		if err != nil {
			continue // e.g. an invalid regexp from the generator
		}
		if cs.fast == nil {
			continue
		}
		fastCovered++
		for j := 0; j < 20; j++ {
			v := genValue(rng, 0)
			lib := cs.s.Validate(v) == nil
			switch cs.fast.eval(v, 0) {
			case fastValid:
				if !lib {
					t.Fatalf("fast accepts, library rejects:\nschema %s\ninstance %s", raw, mustJSON(v))
				}
				agreed++
			case fastInvalid:
				if lib {
					t.Fatalf("fast rejects, library accepts:\nschema %s\ninstance %s", raw, mustJSON(v))
				}
				agreed++
			}
		}
	}
	if fastCovered < n/2 {
		t.Fatalf("only %d of %d schemas took the fast path", fastCovered, n)
	}
	t.Logf("%d schemas on the fast path, %d verdicts compared", fastCovered, agreed)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v, json.Deterministic(true))
	return string(b)
}

var genNames = []string{"a", "b", "c", "id", "é"}

func genValue(rng *rand.Rand, depth int) any {
	k := rng.IntN(9)
	if depth > 3 && k >= 7 {
		k = rng.IntN(7)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return float64(rng.IntN(7) - 3)
	case 3:
		return []float64{0.5, -0.25, 1.0000001, 0.1, 2.5, 1e21, -0.0}[rng.IntN(7)]
	case 4, 5:
		return []string{"", "a", "aa", "ab", "éé", "bug", "x y", "did:agent:x", "GDt8oHZQfQ3jl5ZUfyNxKZu07yAJdDYuaw_jf_JjLYs"}[rng.IntN(9)]
	case 6:
		return genNames[rng.IntN(len(genNames))]
	case 7:
		a := []any{}
		for range rng.IntN(4) {
			a = append(a, genValue(rng, depth+1))
		}
		if len(a) > 0 && rng.IntN(3) == 0 {
			a = append(a, a[0]) // duplicates for uniqueItems
		}
		return a
	default:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[genNames[rng.IntN(len(genNames))]] = genValue(rng, depth+1)
		}
		return m
	}
}

func genSchema(rng *rand.Rand, depth int) any {
	if depth > 0 && rng.IntN(8) == 0 {
		return rng.IntN(3) != 0 // boolean schemas
	}
	s := map[string]any{}
	keywords := rng.IntN(4) + 1
	if depth > 2 {
		keywords = 1
	}
	for range keywords {
		switch rng.IntN(24) {
		case 0:
			types := []string{"null", "boolean", "number", "integer", "string", "array", "object"}
			if rng.IntN(2) == 0 {
				s["type"] = types[rng.IntN(len(types))]
			} else {
				s["type"] = []any{types[rng.IntN(len(types))], types[rng.IntN(len(types))]}
			}
		case 1:
			s["enum"] = []any{genValue(rng, 3), genValue(rng, 3), float64(1)}
		case 2:
			s["const"] = genValue(rng, 2)
		case 3:
			s["minimum"] = float64(rng.IntN(5) - 2)
		case 4:
			s["maximum"] = []float64{1, 0.5, -0.25, 2.5, 0.1}[rng.IntN(5)]
		case 5:
			s["exclusiveMinimum"] = float64(rng.IntN(3) - 1)
		case 6:
			s["exclusiveMaximum"] = []float64{1, 0.1, 1e21}[rng.IntN(3)]
		case 7:
			s["minLength"] = float64(rng.IntN(3))
		case 8:
			s["maxLength"] = float64(rng.IntN(3))
		case 9:
			s["pattern"] = []string{"^a+$", "b", "^[A-Za-z0-9_-]{43}$", "^did:agent:", "é"}[rng.IntN(5)]
		case 10:
			s["minItems"] = float64(rng.IntN(3))
			s["maxItems"] = float64(rng.IntN(4))
		case 11:
			s["uniqueItems"] = rng.IntN(2) == 0
		case 12:
			s["items"] = genSchema(rng, depth+1)
		case 13:
			s["required"] = []any{genNames[rng.IntN(len(genNames))]}
		case 14:
			props := map[string]any{}
			for range rng.IntN(3) + 1 {
				props[genNames[rng.IntN(len(genNames))]] = genSchema(rng, depth+1)
			}
			s["properties"] = props
		case 15:
			if rng.IntN(2) == 0 {
				s["additionalProperties"] = false
			} else {
				s["additionalProperties"] = genSchema(rng, depth+1)
			}
		case 16:
			s["allOf"] = []any{genSchema(rng, depth+1), genSchema(rng, depth+1)}
		case 17:
			s["anyOf"] = []any{genSchema(rng, depth+1), genSchema(rng, depth+1)}
		case 18:
			s["oneOf"] = []any{genSchema(rng, depth+1), genSchema(rng, depth+1), genSchema(rng, depth+1)}
		case 19:
			s["not"] = genSchema(rng, depth+1)
		case 20:
			s["if"] = genSchema(rng, depth+1)
			if rng.IntN(3) > 0 {
				s["then"] = genSchema(rng, depth+1)
			}
			if rng.IntN(3) > 0 {
				s["else"] = genSchema(rng, depth+1)
			}
		case 21:
			s["minProperties"] = float64(rng.IntN(3))
			s["maxProperties"] = float64(rng.IntN(4))
		case 22:
			if depth == 0 {
				s["$defs"] = map[string]any{"d": genSchema(rng, depth+1)}
				s["$ref"] = "#/$defs/d"
			} else {
				s["$ref"] = "#"
			}
		case 23:
			s["format"] = []string{"email", "date-time", "uri", "ipv4"}[rng.IntN(4)]
			s["title"] = "annotated"
		}
	}
	return s
}
