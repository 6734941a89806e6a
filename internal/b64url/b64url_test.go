package b64url

import (
	"bytes"
	"testing"
)

func TestDecodeRejects(t *testing.T) {
	for _, s := range []string{
		"AA==", "AB", // padding; non-zero trailing bits
		"A+/A", "AA\nAA", "AA\rAA", " AAA",
	} {
		if _, err := Decode(s); err == nil {
			t.Errorf("Decode(%q) accepted", s)
		}
	}
	var d [2]byte
	if err := DecodeFixed(d[:], "AAE"); err != nil {
		t.Fatal(err)
	}
	if err := DecodeFixed(d[:], "AAF"); err == nil {
		t.Error("DecodeFixed accepted non-zero trailing bits")
	}
	if err := DecodeFixed(d[:], "AAAA"); err != ErrLength {
		t.Errorf("DecodeFixed wrong length: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{"", "AA", "AAE", "6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw", "AA==", "a\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := Decode(s)
		if err != nil {
			return
		}
		if Encode(b) != s {
			t.Fatalf("accepted non-canonical %q", s)
		}
		if b2, err := Decode(Encode(b)); err != nil || !bytes.Equal(b, b2) {
			t.Fatal("round trip failed")
		}
	})
}
