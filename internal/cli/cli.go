// Package cli holds the command-line conventions the module's programs
// share, so that each behaves as a Unix tool is expected to: --help
// prints the usage to standard output and succeeds; an unknown flag or a
// bad value is one line on standard error, naming the flag, and exit
// status 2.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// StatusUsage is the exit status of a usage error, as in the flag
// package and most Unix tools.
const StatusUsage = 2

// Parse parses args into fs. synopsis is the usage text printed before
// the flags' defaults (what the program does, its arguments and exit
// statuses); it ends with a newline.
//
// When parsing ends the program, Parse returns done and the exit status:
// 0 after -h or --help (the synopsis and the flags on stdout), StatusUsage
// after an unknown flag or a bad value (one line on stderr). Otherwise
// done is false and the program goes on with fs.Args().
func Parse(fs *flag.FlagSet, args []string, synopsis string, stdout, stderr io.Writer) (status int, done bool) {
	fs.SetOutput(io.Discard) // the flag package would print its error and the whole usage
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		PrintUsage(fs, synopsis, stdout)
		return 0, true
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v (see %s --help)\n", fs.Name(), err, fs.Name())
		return StatusUsage, true
	}
	return 0, false
}

// PrintUsage writes the synopsis and the flags with their defaults to w.
func PrintUsage(fs *flag.FlagSet, synopsis string, w io.Writer) {
	fmt.Fprint(w, synopsis)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
}

// EnvString is a string flag whose default comes from an environment
// variable. An error about its value, or about its conflict with another
// flag, names where the value came from (Source): an operator who never
// typed the flag must be told about the variable still exported in the
// shell. --help names the variable but never prints its value, which may
// hold a password.
type EnvString struct {
	fs        *flag.FlagSet
	name, env string
	value     *string
}

// StringEnv defines the flag --name on fs whose value, when the command
// line does not set it, is that of the environment variable env.
func StringEnv(fs *flag.FlagSet, name, env, usage string) *EnvString {
	return &EnvString{fs: fs, name: name, env: env, value: fs.String(name, "", usage+" (default $"+env+")")}
}

// Value is the flag's value after parsing.
func (f *EnvString) Value() string {
	if f.set() {
		return *f.value
	}
	return os.Getenv(f.env)
}

// Source names where the value came from, for messages: "--name" when
// the command line set it, "$ENV" when the environment did, "" when
// neither did.
func (f *EnvString) Source() string {
	switch {
	case f.set():
		return "--" + f.name
	case os.Getenv(f.env) != "":
		return "$" + f.env
	}
	return ""
}

// set reports whether the command line set the flag.
func (f *EnvString) set() bool {
	set := false
	f.fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == f.name })
	return set
}
