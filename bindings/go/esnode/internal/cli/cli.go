// Package cli gives the tests' es-node stand-in the shapes of urfave/cli v1 that es-node's miner
// flags use (a BoolFlag with Name, Usage and EnvVar; Context.GlobalBool), so the --miner.pora flag
// the hook adds to ethstorage/miner/cli.go compiles here as it reads there. It parses only
// "--name" and "--name=true|false" and the flag's environment variable: enough for the tests, not
// a command-line parser. Nothing outside the tests uses it.
package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// Flag is one command-line flag.
type Flag interface{ GetName() string }

// BoolFlag is a boolean flag: set by "--Name", "--Name=BOOL" or its EnvVar.
type BoolFlag struct {
	Name, Usage, EnvVar string
}

// GetName is the flag's name.
func (f BoolFlag) GetName() string { return f.Name }

// Context holds the values a command line and its environment gave the flags.
type Context struct{ bools map[string]bool }

// NewContext parses args against flags; getenv reads the flags' environment variables (a flag
// on the command line wins). An argument naming no flag is an error naming it.
func NewContext(flags []Flag, args []string, getenv func(string) string) (*Context, error) {
	c := &Context{bools: map[string]bool{}}
	known := map[string]BoolFlag{}
	for _, f := range flags {
		if b, ok := f.(BoolFlag); ok {
			known[b.Name] = b
			if v := getenv(b.EnvVar); b.EnvVar != "" && v != "" {
				parsed, err := strconv.ParseBool(v)
				if err != nil {
					return nil, fmt.Errorf("cli: $%s=%q: not a boolean", b.EnvVar, v)
				}
				c.bools[b.Name] = parsed
			}
		}
	}
	for _, arg := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if _, ok := known[name]; !ok || !strings.HasPrefix(arg, "-") {
			return nil, fmt.Errorf("cli: flag provided but not defined: %s", arg)
		}
		parsed := true
		if hasValue {
			var err error
			if parsed, err = strconv.ParseBool(value); err != nil {
				return nil, fmt.Errorf("cli: %s: not a boolean", arg)
			}
		}
		c.bools[name] = parsed
	}
	return c, nil
}

// GlobalBool is the boolean flag's value (false when unset).
func (c *Context) GlobalBool(name string) bool { return c.bools[name] }
