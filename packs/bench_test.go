package packs

import (
	"context"
	"testing"
)

func benchRegistry(b *testing.B) *Registry {
	r := NewRegistry(nil)
	var decls []Declaration
	for _, s := range []string{`{"use":"adp:reactions/1.0"}`, `{"use":"adp:deliberation/1.0"}`} {
		d, err := ParseDeclaration([]byte(s))
		if err != nil {
			b.Fatal(err)
		}
		decls = append(decls, d)
	}
	if err := r.Declare(context.Background(), 1, decls...); err != nil {
		b.Fatal(err)
	}
	return r
}

func benchValidate(b *testing.B, typ, payload string) {
	r := benchRegistry(b)
	p := []byte(payload)
	if err := r.Validate(typ, p); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if err := r.Validate(typ, p); err != nil {
			b.Fatal(err)
		}
	}
}

const benchReaction = `{"event_id":"GDt8oHZQfQ3jl5ZUfyNxKZu07yAJdDYuaw_jf_JjLYs","reaction":"agree","score":0.75}`

const benchPoll = `{"poll_id":"poll-7","question":"Which review pipeline should we adopt?","options":[{"id":"a","label":"Two-stage review"},{"id":"b","label":"Test-driven review","description":"Write failing tests first."},{"id":"c","label":"Security-first review"}],"min_choices":1,"max_choices":2,"closes_at":1779760000000,"references":["GDt8oHZQfQ3jl5ZUfyNxKZu07yAJdDYuaw_jf_JjLYs"]}`

// BenchmarkValidateReaction measures one warm reaction.create validation:
// strict decode plus schema evaluation.
func BenchmarkValidateReaction(b *testing.B) { benchValidate(b, "reaction.create", benchReaction) }

// BenchmarkValidatePoll measures one warm poll.create validation.
func BenchmarkValidatePoll(b *testing.B) { benchValidate(b, "poll.create", benchPoll) }

// BenchmarkValidateBuiltinMessage measures a message.create payload against
// its kernel schema.
func BenchmarkValidateBuiltinMessage(b *testing.B) {
	p := []byte(seedMessage12)
	b.ReportAllocs()
	for b.Loop() {
		if err := ValidateBuiltin("message.create", p); err != nil {
			b.Fatal(err)
		}
	}
}
