// Package cli stands in for urfave/cli v1 in the es-node-shaped tree: the flag types es-node's
// miner flags use (BoolFlag, Uint64Flag with Name, Usage, Value and EnvVar) and Context's
// GlobalBool/GlobalUint64. NewContext parses only "--name", "--name=value" and the flags'
// environment variables: enough for the tree's tests, not a command-line parser.
package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// Flag is one command-line flag.
type Flag interface{ GetName() string }

// BoolFlag is a boolean flag: "--Name", "--Name=BOOL" or its EnvVar.
type BoolFlag struct {
	Name, Usage, EnvVar string
}

// GetName is the flag's name.
func (f BoolFlag) GetName() string { return f.Name }

// Uint64Flag is an unsigned flag with a default Value.
type Uint64Flag struct {
	Name, Usage, EnvVar string
	Value               uint64
}

// GetName is the flag's name.
func (f Uint64Flag) GetName() string { return f.Name }

// Context holds the values the command line and environment gave the flags.
type Context struct{ values map[string]string }

// NewContext parses args against flags; getenv reads the flags' environment variables (the
// command line wins). An argument naming no flag is an error naming it.
func NewContext(flags []Flag, args []string, getenv func(string) string) (*Context, error) {
	c := &Context{values: map[string]string{}}
	known := map[string]bool{}
	for _, f := range flags {
		known[f.GetName()] = true
		switch f := f.(type) {
		case BoolFlag:
			if v := getenv(f.EnvVar); f.EnvVar != "" && v != "" {
				c.values[f.Name] = v
			}
		case Uint64Flag:
			c.values[f.Name] = strconv.FormatUint(f.Value, 10)
			if v := getenv(f.EnvVar); f.EnvVar != "" && v != "" {
				c.values[f.Name] = v
			}
		}
	}
	for _, arg := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !known[name] || !strings.HasPrefix(arg, "-") {
			return nil, fmt.Errorf("cli: flag provided but not defined: %s", arg)
		}
		if !hasValue {
			value = "true"
		}
		c.values[name] = value
	}
	for name, v := range c.values {
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			if _, err := strconv.ParseBool(v); err != nil {
				return nil, fmt.Errorf("cli: --%s=%s: not a value the flag takes", name, v)
			}
		}
	}
	return c, nil
}

// GlobalBool is a boolean flag's value (false when unset or not a boolean).
func (c *Context) GlobalBool(name string) bool {
	b, _ := strconv.ParseBool(c.values[name])
	return b
}

// GlobalUint64 is an unsigned flag's value (0 when unset).
func (c *Context) GlobalUint64(name string) uint64 {
	u, _ := strconv.ParseUint(c.values[name], 10, 64)
	return u
}
