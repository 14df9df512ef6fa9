package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/micro"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/safefile"
)

// Tokens per database. One global token let whoever held it read and
// write every team's databases. An operator mounts a file of tokens
// instead, each with a name (recorded as the author of the feedback it
// gives), the databases it may use and whether it may write (feedback)
// or only read (search, ask, tables, the database list).

// HTTPToken is one entry of the tokens file.
type HTTPToken struct {
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

const (
	accessRead  = "read"
	accessWrite = "write"
	accessAdmin = "admin"
	// minTokenBytes keeps a token out of a guesser's reach.
	minTokenBytes = 16
	// maxTokensFile bounds the file: it is read at start.
	maxTokensFile = 1 << 20
)

// LoadHTTPTokens reads and checks a tokens file: a JSON object
// {"tokens": [...]}, strictly decoded, every problem named.
func LoadHTTPTokens(path string) ([]HTTPToken, error) {
	raw, err := safefile.Read(filepath.Dir(path), path, maxTokensFile)
	if err != nil {
		return nil, fmt.Errorf("http tokens file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var f struct {
		Tokens []HTTPToken `json:"tokens"`
	}
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("http tokens file %q: %w", path, err)
	}
	var errs []error
	names := map[string]bool{}
	for i, t := range f.Tokens {
		at := fmt.Sprintf("http tokens file %q: tokens[%d]", path, i)
		switch {
		case t.Name == "" || strings.ContainsAny(t.Name, "\n\r\t "):
			errs = append(errs, fmt.Errorf("%s: a name without blanks is required", at))
		case names[t.Name]:
			errs = append(errs, fmt.Errorf("%s: name %q is used twice", at, t.Name))
		}
		names[t.Name] = true
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
		if t.Access != accessRead && t.Access != accessWrite && t.Access != accessAdmin {
			errs = append(errs, fmt.Errorf("%s (%s): access is %q, %q or %q", at, t.Name, accessRead, accessWrite, accessAdmin))
		}
	}
	if len(f.Tokens) == 0 {
		errs = append(errs, fmt.Errorf("http tokens file %q: no tokens", path))
	}
	return f.Tokens, errors.Join(errs...)
}

// principal is who a request authenticated as.
type principal struct {
	name      string
	databases []string // "*" for every one
	write     bool
	admin     bool
}

// nameOr is the token's name, or def without tokens.
func (p *principal) nameOr(def string) string {
	if p == nil {
		return def
	}
	return p.name
}

// useOf is forbidden when p may not use db.
func (p *principal) useOf(db string) *events.Error {
	if !p.mayUse(db) {
		return events.Errorf(events.CodeForbidden, "token %q may not use database %s", p.name, events.Quote(db))
	}
	return nil
}

func (p *principal) mayUse(db string) bool {
	return slices.Contains(p.databases, "*") || slices.Contains(p.databases, db)
}

type principalKey struct{}

func principalOf(ctx context.Context) *principal {
	p, _ := ctx.Value(principalKey{}).(*principal)
	return p
}

// keyring holds the tokens' hashes, compared in constant time against a
// request's; every entry is compared, whatever matched first.
type keyring struct {
	hashes [][sha256.Size]byte
	owners []*principal
}

func newKeyring(global string, tokens []HTTPToken) *keyring {
	k := &keyring{}
	if global != "" {
		k.add(sha256.Sum256([]byte(global)), &principal{name: "token", databases: []string{"*"}, write: true, admin: true})
	}
	for _, t := range tokens {
		h := sha256.Sum256([]byte(t.Token))
		if t.SHA256 != "" {
			b, _ := hex.DecodeString(t.SHA256)
			copy(h[:], b)
		}
		k.add(h, &principal{name: t.Name, databases: t.Databases, write: t.Access != accessRead, admin: t.Access == accessAdmin})
	}
	return k
}

func (k *keyring) add(h [sha256.Size]byte, p *principal) {
	k.hashes = append(k.hashes, h)
	k.owners = append(k.owners, p)
}

func (k *keyring) empty() bool { return len(k.hashes) == 0 }

// find returns the holder of the bearer token in header, or nil.
func (k *keyring) find(header string) *principal {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return nil
	}
	got := sha256.Sum256([]byte(token))
	var found *principal
	for i, h := range k.hashes {
		if subtle.ConstantTimeCompare(got[:], h[:]) == 1 {
			found = k.owners[i]
		}
	}
	return found
}

// mayAsk checks a principal's right to one endpoint's request about db:
// the database, and write access for feedback. No principal (NATS, or an
// API without tokens) may ask anything its transport let through.
func (p *principal) mayAsk(endpoint, db string) *events.Error {
	if p == nil {
		return nil
	}
	if e := p.useOf(db); e != nil {
		return e
	}
	if endpoint == events.EndpointFeedback && !p.write {
		return events.Errorf(events.CodeForbidden, "token %q may read database %s, not give feedback to it", p.name, events.Quote(db))
	}
	return nil
}

// principalOfRequest is the token holder of a request that came over
// HTTP, nil for one over NATS.
func principalOfRequest(r micro.Request) *principal {
	if h, ok := r.(*httpRequest); ok {
		return h.who
	}
	return nil
}

// authorized requires a known bearer token when any is configured, and
// carries its holder in the request's context.
func authorized(ring *keyring, next http.Handler) http.Handler {
	if ring.empty() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := ring.find(r.Header.Get("Authorization"))
		if p == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="schemaq"`)
			writeJSONError(w, http.StatusUnauthorized, "", &events.Error{Code: "unauthorized", Message: "a bearer token is required: Authorization: Bearer <token> (the server's SCHEMAQ_HTTP_TOKEN, or one of its tokens file)"})
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}
