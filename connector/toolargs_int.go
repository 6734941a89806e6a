package connector

import (
	"errors"
	"math"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// maxExactInt is the largest integer a float64 holds exactly (2^53).
const maxExactInt = 1 << 53

// wholeNumbers decodes a JSON number with an integral value into an
// integer field however it is written (100, 100.0, 1e2): JSON Schema's
// "integer" admits any number with a zero fractional part (JSON Schema
// Validation 2020-12 §6.1.1), so the tool's published schema accepts
// 100.0 and so must its decoder (a client that encodes integers as
// floats). A fraction, or a value beyond ±2^53 not written as an integer,
// is refused.
var wholeNumbers = jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *int64) error {
		n, err := wholeNumber(dec)
		if err == nil {
			*v = n
		}
		return err
	}),
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *int) error {
		n, err := wholeNumber(dec)
		if err == nil && int64(int(n)) != n {
			err = strconv.ErrRange
		}
		if err == nil {
			*v = int(n)
		}
		return err
	}),
))

// wholeNumber reads a number token with an integral value; any other
// token is left to the default decoding (errors.ErrUnsupported).
func wholeNumber(dec *jsontext.Decoder) (int64, error) {
	if dec.PeekKind() != '0' {
		return 0, errors.ErrUnsupported
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return 0, err
	}
	s := tok.String()
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxExactInt {
		return 0, &strconv.NumError{Func: "integer", Num: s, Err: strconv.ErrSyntax}
	}
	return int64(f), nil
}

// unmarshalArgs decodes arguments validateArgs accepted into v, with
// wholeNumbers: their numbers were held to strictjson's policy there, and
// json/v2 itself refuses duplicate names and invalid UTF-8.
func unmarshalArgs(b []byte, v any) error {
	return jsonv2.Unmarshal(b, v, jsonv2.RejectUnknownMembers(true), wholeNumbers)
}
