package adp

// ParseRecordPlain is ParseRecord's plain path (split the object, then
// parse each member in order), against which FuzzParseRecord checks the
// one-pass path.
func ParseRecordPlain(b []byte) (*Record, error) { return parseRecord(b, nil) }
