package archive

import (
	"errors"
	"strconv"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// SDK error codes for archives. They are not §20 protocol codes: a host
// never sends them; verifiers report them for failures that §19 requires
// them to detect but §20 gives no code for.
const (
	// CodeArchiveMismatch: the records do not match what the manifest
	// claims (event_count, first_seq, last_seq, last_hash,
	// events_sha3_256, archive_root, room_id).
	CodeArchiveMismatch identity.Code = "archive_mismatch"
	// CodeInvalidManifest: the manifest is not a well-formed seed-draft
	// room.archive manifest.
	CodeInvalidManifest identity.Code = "invalid_manifest"
)

// Sentinels for [errors.Is]. Record-level failures carry the protocol code
// the host should have answered ([adp.ErrPermissionDenied],
// [adp.ErrPayloadSchemaViolation], …) or [adp.ErrInvalidRecord] for a broken
// record, hash or chain; pack documents that do not match their digest are
// [adp.ErrPackUnavailable].
var (
	ErrArchiveMismatch = identity.NewError(CodeArchiveMismatch, "archive does not match its manifest")
	ErrInvalidManifest = identity.NewError(CodeInvalidManifest, "invalid archive manifest")
)

// failure builds the error Verify returns: the cause's code, a message
// naming the seq (and line) of the failing record, and Data
// {"seq":…,"line":…} so that callers can read the position without
// parsing text. The cause stays reachable through errors.Is/As.
func failure(cause error, seq, line int64) *identity.Error {
	code := identity.Code(adp.CodeInvalidRecord)
	msg := cause.Error()
	var e *identity.Error
	if errors.As(cause, &e) {
		code, msg = e.Code, e.Message
	}
	prefix, data := "", []byte{'{'}
	if seq > 0 {
		prefix = "record seq " + strconv.FormatInt(seq, 10)
		data = strconv.AppendInt(append(data, `"seq":`...), seq, 10)
	}
	if line > 0 {
		if prefix == "" {
			prefix = "records line " + strconv.FormatInt(line, 10)
		} else {
			prefix += " (line " + strconv.FormatInt(line, 10) + ")"
		}
		if len(data) > 1 {
			data = append(data, ',')
		}
		data = strconv.AppendInt(append(data, `"line":`...), line, 10)
	}
	if prefix != "" {
		msg = prefix + ": " + msg
	}
	return &identity.Error{Code: code, Message: msg, Data: append(data, '}'), Err: cause}
}

func mismatch(format string, args ...any) *identity.Error {
	return identity.Errorf(CodeArchiveMismatch, format, args...)
}
