// Package verify checks SQL the guard passed against a real PostgreSQL
// before it is returned: EXPLAIN, never execution, inside a read-only
// transaction with a short statement_timeout, as the role the DSN names
// (a reader: docs/ask.md). A statement PostgreSQL cannot plan (a type
// error, a column the catalog replay got wrong, a permission the role
// lacks) is refused with PostgreSQL's message, for the model's repair
// round; one whose estimated cost or rows pass the configured limits is
// refused as too expensive.
package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/schemaq/schemaq/pkg/sqlguard"
)

// Config of a verifier.
type Config struct {
	// DSN is a PostgreSQL connection string; {database} in it is replaced
	// by the schemaq database an answer is for, so one daemon can verify
	// against a server per database. Use a reader role.
	DSN string
	// Timeout bounds one verification (statement_timeout, and the
	// connection); 0 means 2 s.
	Timeout time.Duration
	// MaxCost and MaxRows refuse a plan whose total estimated cost or
	// rows pass them; 0 means no limit.
	MaxCost float64
	MaxRows float64
}

// A verdict is a *sqlguard.Rejection, as the guard's are, so the ask
// path treats it the same way (one repair round with the reason):
// ErrInvalid for a statement PostgreSQL will not plan, ErrUnsafe for one
// whose plan is too expensive.

// ErrUnavailable marks a verification that could not run (the server
// does not answer): not a verdict on the SQL.
var ErrUnavailable = errors.New("verification database unavailable")

// Verifier holds a connection pool per database.
type Verifier struct {
	cfg   Config
	mu    sync.Mutex
	pools map[string]*pgxpool.Pool
}

// New checks cfg; connections are made on first use.
func New(cfg Config) (*Verifier, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if _, err := pgxpool.ParseConfig(strings.ReplaceAll(cfg.DSN, "{database}", "x")); err != nil {
		return nil, fmt.Errorf("verify DSN: %w", err)
	}
	return &Verifier{cfg: cfg, pools: map[string]*pgxpool.Pool{}}, nil
}

// Close closes every pool.
func (v *Verifier) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, p := range v.pools {
		p.Close()
	}
}

func (v *Verifier) pool(ctx context.Context, database string) (*pgxpool.Pool, error) {
	dsn := strings.ReplaceAll(v.cfg.DSN, "{database}", database)
	v.mu.Lock()
	defer v.mu.Unlock()
	if p, ok := v.pools[dsn]; ok {
		return p, nil
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("verify DSN: %w", err)
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.ConnectTimeout = v.cfg.Timeout
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	v.pools[dsn] = p
	return p, nil
}

// Verify EXPLAINs sql for database. It returns a *sqlguard.Rejection when PostgreSQL
// will not plan it or the plan is too expensive, an error wrapping
// ErrUnavailable when it could not ask, and nil otherwise.
func (v *Verifier) Verify(ctx context.Context, database, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, v.cfg.Timeout+time.Second)
	defer cancel()
	p, err := v.pool(ctx, database)
	if err != nil {
		return err
	}
	tx, err := p.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // read only: nothing to keep
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", v.cfg.Timeout.Milliseconds())); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	var plan []byte
	// EXPLAIN plans the statement and never runs it; the guard has made
	// sure it is one read-only SELECT.
	err = tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+strings.TrimSuffix(strings.TrimSpace(sql), ";")).Scan(&plan)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		return &sqlguard.Rejection{Kind: sqlguard.ErrInvalid, Reason: fmt.Sprintf("PostgreSQL cannot plan it: %s (SQLSTATE %s)", pgErr.Message, pgErr.Code)}
	case err != nil:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	cost, rows, err := estimates(plan)
	if err != nil {
		return fmt.Errorf("%w: read the plan: %w", ErrUnavailable, err)
	}
	switch {
	case v.cfg.MaxCost > 0 && cost > v.cfg.MaxCost:
		return &sqlguard.Rejection{Kind: sqlguard.ErrUnsafe, Reason: fmt.Sprintf("too expensive: PostgreSQL estimates a cost of %.0f, the limit is %.0f; narrow the query (a filter, a LIMIT)", cost, v.cfg.MaxCost)}
	case v.cfg.MaxRows > 0 && rows > v.cfg.MaxRows:
		return &sqlguard.Rejection{Kind: sqlguard.ErrUnsafe, Reason: fmt.Sprintf("too expensive: PostgreSQL estimates %.0f rows, the limit is %.0f; narrow the query (a filter, a LIMIT)", rows, v.cfg.MaxRows)}
	}
	return nil
}

// estimates reads the top plan node's total cost and rows.
func estimates(plan []byte) (cost, rows float64, err error) {
	var out []struct {
		Plan struct {
			TotalCost float64 `json:"Total Cost"`
			PlanRows  float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(plan, &out); err != nil || len(out) == 0 {
		return 0, 0, fmt.Errorf("unexpected EXPLAIN output: %.200s", plan)
	}
	return out[0].Plan.TotalCost, out[0].Plan.PlanRows, nil
}
