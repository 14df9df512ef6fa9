package catalog

import (
	"errors"
	"fmt"
)

// Sentinels classify why a statement failed; match them with errors.Is.
var (
	// ErrSyntax: the SQL does not parse with the PostgreSQL 16 grammar.
	ErrSyntax = errors.New("syntax error")
	// ErrUndefined: a statement names a table, column, type, schema or
	// constraint that does not exist.
	ErrUndefined = errors.New("undefined object")
	// ErrDuplicate: a statement creates something that already exists.
	ErrDuplicate = errors.New("duplicate object")
	// ErrDependent: a DROP without CASCADE would break other objects.
	ErrDependent = errors.New("dependent objects")
	// ErrInvalid: the statement is well-formed but PostgreSQL would refuse
	// it for another reason (two primary keys, say).
	ErrInvalid = errors.New("invalid definition")
)

// Error reports the statement an Apply failed at. It wraps one of the
// sentinels above.
type Error struct {
	Source    string // event source, usually a migration file name
	Statement int    // 1-based index of the statement in the source
	Line      int    // 1-based line of the error (or of the statement)
	Column    int    // 1-based column, counted in characters
	Excerpt   string // the start of the failing statement
	Err       error
}

func (e *Error) Error() string {
	src := e.Source
	if src == "" {
		src = "(no source)"
	}
	msg := fmt.Sprintf("%s: statement %d (line %d, column %d): %v", src, e.Statement, e.Line, e.Column, e.Err)
	if e.Excerpt != "" {
		msg += fmt.Sprintf(" in %q", e.Excerpt)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

func undefined(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUndefined}, args...)...)
}

func duplicate(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrDuplicate}, args...)...)
}

func dependent(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrDependent}, args...)...)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// syntaxError carries libpg_query's message as is ("syntax error at or near
// …") while matching ErrSyntax.
type syntaxError string

func (e syntaxError) Error() string        { return string(e) }
func (e syntaxError) Is(target error) bool { return target == ErrSyntax }

// cleanErr marks a failure found before the statement changed anything
// (the relation it names does not exist): a tolerant apply can skip the
// statement where it stands instead of applying the script again without
// it, which costs a clone of the catalog per skipped statement.
type cleanErr struct{ error }

func (e cleanErr) Unwrap() error { return e.error }

func clean(err error) error {
	if err == nil {
		return nil
	}
	return cleanErr{err}
}
