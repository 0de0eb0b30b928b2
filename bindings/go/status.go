// Errors: a pora call's status, the *Error it becomes and the sentinels errors.Is matches,
// shared by every build (the stub's calls return them too, for an Encoder's bad blob length);
// the status codes' values are pora.h's, so they stay with the library (pora.go) and in the stub.

package porago

import "fmt"

// Status is a pora call's status code (PoraStatus in pora.h).
type Status int

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusInvalidArgument:
		return "invalid argument"
	case StatusIO:
		return "i/o error"
	case StatusShard:
		return "bad shard"
	case StatusBusy:
		return "busy"
	case StatusClosed:
		return "closed"
	case StatusPanic:
		return "panic"
	}
	return fmt.Sprintf("status %d", int(s))
}

// Error is a failed pora call: its status and pora's message.
type Error struct {
	Status  Status
	Op      string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("pora %s: %s: %s", e.Op, e.Status, e.Message)
}

// Is makes errors.Is(err, ErrBusy) (and the other sentinels) match on the status.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Op == "" && t.Message == "" && t.Status == e.Status
}

// Sentinels for errors.Is.
var (
	ErrInvalidArgument = &Error{Status: StatusInvalidArgument}
	ErrIO              = &Error{Status: StatusIO}
	ErrShard           = &Error{Status: StatusShard}
	ErrBusy            = &Error{Status: StatusBusy}
	ErrClosed          = &Error{Status: StatusClosed}
	ErrPanic           = &Error{Status: StatusPanic}
)
