// Package jsonl is the connector program's one newline-delimited JSON-RPC
// framing: `serve` reads MCP from standard input with it ([Transport]),
// and `acp` reads the ACP conductor's messages with it. A line that is
// not one JSON-RPC message is answered and skipped, never the end of the
// connection, which the go-sdk's own stdio transport ends on the first
// bad line (modelcontextprotocol/go-sdk#1209; the fix, #1210, is not
// released).
//
// The package also holds the checks every transport of the program
// applies to a message before the go-sdk sees it, where the SDK would
// answer wrongly: a request id it cannot echo exactly, initialize params
// it decodes without an error code, and answers with the code 0
// ([CheckRequestID], [CheckInitializeParams], [CodedError]).
package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrTooLong reports a line longer than the Reader's bound. The line was
// read to its end and dropped, so the next line is read from its start.
var ErrTooLong = errors.New("jsonl: line too long")

// Reader reads the lines of a newline-delimited JSON-RPC stream. Memory
// is bounded by the line limit whatever the input: a longer line is
// consumed in pieces and reported, never held.
type Reader struct {
	br  *bufio.Reader
	max int
	err error // the error that ended the input, once its last line is returned
}

// NewReader returns a Reader of r whose lines hold at most max bytes,
// besides their line ending.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line that is not blank, without its line ending
// (LF or CRLF); the last line of the input needs none. A line of more
// than max bytes is [ErrTooLong], unless it is blank: blank lines, of any
// length, are skipped. At the end of the input Next returns io.EOF, or
// the error that ended it.
func (r *Reader) Next() ([]byte, error) {
	for r.err == nil {
		line, tooLong, err := r.readLine()
		r.err = err
		switch {
		case tooLong:
			return nil, ErrTooLong
		case !Blank(line):
			return line, nil
		}
	}
	return nil, r.err
}

// readLine returns the next line without its line ending. A line over
// max bytes is consumed to its end and reported as tooLong, with no
// content, unless it is blank: then it is returned empty.
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	spaceOnly := true
	for {
		frag, err := r.br.ReadSlice('\n')
		spaceOnly = spaceOnly && Blank(frag)
		if !tooLong {
			if len(line)+len(frag) > r.max+2 { // room for "\r\n"
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong && spaceOnly {
			return nil, false, err
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

// Blank reports whether a line holds only JSON white space (RFC 8259:
// space, tab, CR, LF), which is skipped. Other white space (a vertical
// tab, U+00A0) is not JSON's: such a line is answered as any line that is
// not JSON is, as it is when it is too long to read.
func Blank(line []byte) bool { return len(bytes.Trim(line, " \t\r\n")) == 0 }
