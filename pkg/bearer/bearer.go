// Package bearer holds the bearer tokens that the HTTP API and the MCP
// server's HTTP transport accept: a file of tokens, each with a name,
// the databases it may use and its access, and the keyring that finds a
// request's token among them in constant time.
//
// One global token let whoever held it read and write every team's
// databases. An operator mounts a file of tokens instead, each with a
// name (recorded as the author of the feedback it gives), the databases
// it may use and whether it may write (feedback) or only read (search,
// ask, tables, the database list).
package bearer

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/safefile"
)

// Token is one entry of the tokens file.
type Token struct {
	// Name identifies the holder in logs and as feedback's author.
	Name string `json:"name"`
	// Token is the bearer token itself, or SHA256 its SHA-256 in hex so
	// that the file need not hold the secret.
	Token  string `json:"token,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Databases it may use; "*" is every database.
	Databases []string `json:"databases"`
	// Access is "read", "write" (feedback, deleting examples) or
	// "admin" (write, and the console's operations: the stream's state
	// and the dead letters of its databases, retried or deleted).
	Access string `json:"access"`
}

// The accesses a token may have.
const (
	AccessRead  = "read"
	AccessWrite = "write"
	AccessAdmin = "admin"
)

const (
	// minTokenBytes keeps a token out of a guesser's reach.
	minTokenBytes = 16
	// maxFileBytes bounds the file: it is read at start.
	maxFileBytes = 1 << 20
)

// Load reads and checks a tokens file: a JSON object {"tokens": [...]},
// strictly decoded, every problem named.
func Load(path string) ([]Token, error) {
	raw, err := safefile.Read(filepath.Dir(path), path, maxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var f struct {
		Tokens []Token `json:"tokens"`
	}
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("tokens file %q: %w", path, err)
	}
	var errs []error
	names := map[string]bool{}
	for i, t := range f.Tokens {
		errs = append(errs, t.check(fmt.Sprintf("tokens file %q: tokens[%d]", path, i), names)...)
		names[t.Name] = true
	}
	if len(f.Tokens) == 0 {
		errs = append(errs, fmt.Errorf("tokens file %q: no tokens", path))
	}
	return f.Tokens, errors.Join(errs...)
}

// check names what is wrong with t, at where in the file; names are
// those of the entries before it.
func (t Token) check(at string, names map[string]bool) []error {
	var errs []error
	switch {
	case t.Name == "" || strings.ContainsAny(t.Name, "\n\r\t "):
		errs = append(errs, fmt.Errorf("%s: a name without blanks is required", at))
	case names[t.Name]:
		errs = append(errs, fmt.Errorf("%s: name %q is used twice", at, t.Name))
	}
	switch {
	case (t.Token == "") == (t.SHA256 == ""):
		errs = append(errs, fmt.Errorf("%s (%s): give token or sha256, one of them", at, t.Name))
	case t.Token != "" && len(t.Token) < minTokenBytes:
		errs = append(errs, fmt.Errorf("%s (%s): a token of at least %d bytes is required", at, t.Name, minTokenBytes))
	case t.SHA256 != "":
		if b, err := hex.DecodeString(t.SHA256); err != nil || len(b) != sha256.Size {
			errs = append(errs, fmt.Errorf("%s (%s): sha256 is not 64 hex digits", at, t.Name))
		}
	}
	if len(t.Databases) == 0 {
		errs = append(errs, fmt.Errorf("%s (%s): list its databases (\"*\" for every one)", at, t.Name))
	}
	for _, db := range t.Databases {
		if db != "*" && events.ValidateDatabase(db) != nil {
			errs = append(errs, fmt.Errorf("%s (%s): database %s is not a database name", at, t.Name, events.Quote(db)))
		}
	}
	if t.Access != AccessRead && t.Access != AccessWrite && t.Access != AccessAdmin {
		errs = append(errs, fmt.Errorf("%s (%s): access is %q, %q or %q", at, t.Name, AccessRead, AccessWrite, AccessAdmin))
	}
	return errs
}

// Grant is what a token's holder may do.
type Grant struct {
	Name      string
	Databases []string // "*" for every one
	Write     bool
	Admin     bool
}

// MayUse reports whether the holder may use db.
func (g *Grant) MayUse(db string) bool {
	return slices.Contains(g.Databases, "*") || slices.Contains(g.Databases, db)
}

// Keyring holds the tokens' hashes, compared in constant time against a
// request's; every entry is compared, whatever matched first. Its set
// may be replaced while requests read it (Watch).
type Keyring struct {
	set atomic.Pointer[keys]
}

type keys struct {
	hashes [][sha256.Size]byte
	owners []*Grant
}

// NewKeyring holds tokens, and global, when set, as one more named
// "token" with every right on every database.
func NewKeyring(global string, tokens []Token) *Keyring {
	k := &Keyring{}
	k.Replace(global, tokens)
	return k
}

// Replace makes global and tokens the keyring's set, at once for every
// request that reads it after.
func (k *Keyring) Replace(global string, tokens []Token) {
	ks := &keys{}
	if global != "" {
		ks.add(sha256.Sum256([]byte(global)), &Grant{Name: "token", Databases: []string{"*"}, Write: true, Admin: true})
	}
	for _, t := range tokens {
		h := sha256.Sum256([]byte(t.Token))
		if t.SHA256 != "" {
			b, _ := hex.DecodeString(t.SHA256)
			copy(h[:], b)
		}
		ks.add(h, &Grant{Name: t.Name, Databases: t.Databases, Write: t.Access != AccessRead, Admin: t.Access == AccessAdmin})
	}
	k.set.Store(ks)
}

func (ks *keys) add(h [sha256.Size]byte, g *Grant) {
	ks.hashes = append(ks.hashes, h)
	ks.owners = append(ks.owners, g)
}

// Empty reports whether the keyring holds no token.
func (k *Keyring) Empty() bool { return len(k.set.Load().hashes) == 0 }

// Find returns the grant of token, or nil.
func (k *Keyring) Find(token string) *Grant {
	got := sha256.Sum256([]byte(token))
	ks := k.set.Load()
	var found *Grant
	for i, h := range ks.hashes {
		if subtle.ConstantTimeCompare(got[:], h[:]) == 1 {
			found = ks.owners[i]
		}
	}
	return found
}

// FromHeader returns the grant of the bearer token in an Authorization
// header, or nil. The scheme's name is case-insensitive (RFC 9110
// §11.1): clients that send "bearer" were refused.
func (k *Keyring) FromHeader(header string) *Grant {
	const scheme = "Bearer "
	if len(header) < len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return nil
	}
	return k.Find(header[len(scheme):])
}
