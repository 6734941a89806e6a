package cli

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

func newFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	fs.Int("n", 1, "how many")
	return fs
}

const synopsis = "usage: prog [-n N] FILE\n"

// TestParse: --help is the usage on stdout with status 0; an unknown flag
// or a bad value is one line on stderr naming it, with status 2; good
// flags leave the arguments to the program.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		args       []string
		status     int
		done       bool
		out, err   string // substrings; "" means empty
		errOneLine bool
	}{
		{args: []string{"--help"}, status: 0, done: true, out: "usage: prog [-n N] FILE\n\nflags:\n  -n int"},
		{args: []string{"-h"}, status: 0, done: true, out: "how many (default 1)"},
		{args: []string{"--bogus", "x"}, status: 2, done: true, err: "prog: flag provided but not defined: -bogus (see prog --help)\n", errOneLine: true},
		{args: []string{"-n", "many"}, status: 2, done: true, err: `invalid value "many" for flag -n`, errOneLine: true},
		{args: []string{"-n", "3", "file"}, status: 0, done: false},
	} {
		var out, errb bytes.Buffer
		fs := newFlags()
		status, done := Parse(fs, c.args, synopsis, &out, &errb)
		if status != c.status || done != c.done {
			t.Errorf("%q: status %d done %v, want %d %v", c.args, status, done, c.status, c.done)
		}
		check := func(what, got, want string) {
			if want == "" && got != "" || !strings.Contains(got, want) {
				t.Errorf("%q: %s %q, want it to contain %q", c.args, what, got, want)
			}
		}
		check("stdout", out.String(), c.out)
		check("stderr", errb.String(), c.err)
		if c.errOneLine && strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%q: stderr is not one line: %q", c.args, errb.String())
		}
		if !done && (fs.NArg() != 1 || fs.Arg(0) != "file") {
			t.Errorf("%q: args %q", c.args, fs.Args())
		}
	}
}

// TestEnvString: the environment gives the default, the command line
// wins, and Source says which one a message must name.
func TestEnvString(t *testing.T) {
	const env = "CLI_TEST_POSTGRES"
	for _, c := range []struct {
		env    string
		args   []string
		value  string
		source string
	}{
		{"", nil, "", ""},
		{"postgres://env", nil, "postgres://env", "$" + env},
		{"postgres://env", []string{"--postgres", "postgres://flag"}, "postgres://flag", "--postgres"},
		{"", []string{"--postgres", "postgres://flag"}, "postgres://flag", "--postgres"},
	} {
		t.Setenv(env, c.env)
		fs := flag.NewFlagSet("prog", flag.ContinueOnError)
		pg := StringEnv(fs, "postgres", env, "database URL")
		if status, done := Parse(fs, c.args, synopsis, new(bytes.Buffer), new(bytes.Buffer)); done {
			t.Fatalf("%q: parse ended with %d", c.args, status)
		}
		if pg.Value() != c.value || pg.Source() != c.source {
			t.Errorf("env %q, args %q: value %q from %q, want %q from %q", c.env, c.args, pg.Value(), pg.Source(), c.value, c.source)
		}
	}
	t.Setenv(env, "postgres://adp:secret@db")
	var out bytes.Buffer
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	StringEnv(fs, "postgres", env, "database URL")
	Parse(fs, []string{"--help"}, synopsis, &out, new(bytes.Buffer))
	if !strings.Contains(out.String(), "(default $"+env+")") || strings.Contains(out.String(), "secret") {
		t.Errorf("--help must name the variable, not print its value:\n%s", out.String())
	}
}
