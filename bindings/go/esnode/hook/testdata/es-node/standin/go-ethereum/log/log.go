// Package log stands in for go-ethereum's log package in the es-node-shaped tree: the Logger
// methods es-node calls (a message, then key-value pairs), and a logger that drops every line.
package log

// Logger is the part of go-ethereum's log.Logger es-node's miner and caches call.
type Logger interface {
	Debug(msg string, ctx ...interface{})
	Info(msg string, ctx ...interface{})
	Warn(msg string, ctx ...interface{})
	Error(msg string, ctx ...interface{})
	Crit(msg string, ctx ...interface{})
}

// Discard is a logger that writes nothing.
type Discard struct{}

func (Discard) Debug(string, ...interface{}) {}
func (Discard) Info(string, ...interface{})  {}
func (Discard) Warn(string, ...interface{})  {}
func (Discard) Error(string, ...interface{}) {}
func (Discard) Crit(string, ...interface{})  {}
