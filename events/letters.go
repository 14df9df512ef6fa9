package events

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadLetter marks a dead letter that cannot be re-sent: it is not on a
// dead-letter subject, or its body is not an event of that letter's
// database.
var ErrBadLetter = errors.New("malformed dead letter")

// ResendSubject is where the event of a dead letter goes when it is
// retried: the event's own subject, computed from the decoded event and
// the database of the dead-letter subject the letter sits on. Headers
// are not consulted. Anyone who can publish to the dead-letter stream
// can write a letter, and a letter that named its own target could have
// a worker publish to $JS.API.STREAM.DELETE.… or any other subject.
func ResendSubject(letterSubject string, data []byte) (string, error) {
	db, ok := strings.CutPrefix(letterSubject, "schemaq.dlq.")
	if !ok || ValidateDatabase(db) != nil {
		return "", fmt.Errorf("%w: subject %s is not a database's dead-letter subject", ErrBadLetter, Quote(letterSubject))
	}
	ev, err := Decode(data, 0)
	if err != nil {
		return "", fmt.Errorf("%w: its event does not decode: %w", ErrBadLetter, err)
	}
	if ev.Database != db {
		return "", fmt.Errorf("%w: a letter of database %s holds an event of database %s", ErrBadLetter, db, ev.Database)
	}
	return ev.Subject(), nil
}
