package adp

import "testing"

// TestParseRecordListOpen: the history page (§16) is an unsigned answer
// whose
// unknown members are ignored and next_cursor null means the last page,
// but the page stays strict JSON.
func TestParseRecordListOpen(t *testing.T) {
	for _, c := range []struct {
		in       string
		ok, more bool
	}{
		{`{"result":[],"next_cursor":null}`, true, false},
		{`{"count":0,"result":[],"x_vendor":{"a":[1]}}`, true, false},
		{`{"result":[],"next_cursor":"c","total":3}`, true, true},
		{`{"result":[],"x":9007199254740993}`, false, false}, // unsafe integer
		{`{"result":[],"x":1,"x":2}`, false, false},          // duplicate member
		{`{"result":[],"x":"\ud800"}`, false, false},         // lone surrogate
		{`{"result":[],"next_cursor":""}`, false, false},
		{`{"next_cursor":null}`, false, false},
	} {
		_, more, err := parseRecordList(DefaultDraft, []byte(c.in))
		if (err == nil) != c.ok || more != c.more {
			t.Errorf("%s: more %v, err %v", c.in, more, err)
		}
	}
}
