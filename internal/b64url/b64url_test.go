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

// FuzzDecodeFixed pins DecodeFixed and DecodeFixedBytes to Decode: the same
// verdict and bytes for every input and length, including texts longer than
// DecodeFixed's stack buffer.
func FuzzDecodeFixed(f *testing.F) {
	for _, s := range []string{"", "AAE", "6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw",
		"6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw",
		string(bytes.Repeat([]byte("AAAA"), 40)) + "AAE", "AA==", "a\nb"} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
	}
	f.Fuzz(func(t *testing.T, s string, delta uint8) {
		want, werr := Decode(s)
		n := len(s) * 3 / 4
		if delta&1 == 1 {
			n++ // a wrong length
		}
		got := make([]byte, n)
		err := DecodeFixed(got, s)
		gotB := make([]byte, n)
		errB := DecodeFixedBytes(gotB, []byte(s))
		if (err == nil) != (errB == nil) {
			t.Fatalf("DecodeFixed %v, DecodeFixedBytes %v", err, errB)
		}
		if err != nil {
			if werr == nil && len(want) == n {
				t.Fatalf("DecodeFixed refused %q (%v), Decode accepted it", s, err)
			}
			return
		}
		if werr != nil || !bytes.Equal(got, want) || !bytes.Equal(gotB, want) {
			t.Fatalf("DecodeFixed %x, DecodeFixedBytes %x, Decode %x (%v)", got, gotB, want, werr)
		}
	})
}

func TestDecodeFixedAllocates(t *testing.T) {
	var sig [64]byte
	s := Encode(bytes.Repeat([]byte{7}, 64))
	b := []byte(s)
	if n := testing.AllocsPerRun(100, func() { _ = DecodeFixed(sig[:], s) }); n != 0 {
		t.Errorf("DecodeFixed: %v allocations", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = DecodeFixedBytes(sig[:], b) }); n != 0 {
		t.Errorf("DecodeFixedBytes: %v allocations", n)
	}
}
