package envelope

// ParseGeneral is ParsePrefix (with prefix set) or Parse through the
// general parse alone, without the path for AppendJSON's own text: the
// reference FuzzParseWire holds that path to.
func ParseGeneral(b []byte, prefix bool) (*Envelope, int, error) {
	if len(b) > MaxSize {
		if !prefix {
			env, err := Parse(b) // refused by its size before either path
			return env, 0, err
		}
		b = b[:MaxSize]
	}
	return parseGeneral(b, nil, prefix)
}

// ParseWire is the path for AppendJSON's own text alone.
func ParseWire(b []byte, prefix bool) (*Envelope, int, bool) {
	if len(b) > MaxSize {
		return nil, 0, false
	}
	return parseWire(b, nil, prefix)
}
