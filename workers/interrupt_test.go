package workers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
	"github.com/schemaq/schemaq/workers"
)

// TestStopCutsAnApply: SIGTERM (Run's context ending) cuts a migration
// that is being applied instead of waiting for it through the grace
// period: the apply is all in memory, so nothing of it is written, and
// the next worker applies it whole, with no stop for the cancellation in
// its drift.
func TestStopCutsAnApply(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	cfg.ShutdownTimeout = 30 * time.Second
	// The apply takes seconds under the race detector: the message
	// timeout must not be what cuts it (that is retried the same way,
	// and this test is about the stop).
	cfg.MessageTimeout, cfg.Consumer.AckWait, cfg.GapTimeout = time.Minute, 70*time.Second, 2*time.Minute
	var schema strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&schema, "CREATE TABLE t%d (id int PRIMARY KEY, note text);\n", i)
	}
	w, err := workers.New(e.js, e.cats, e.store, e.emb, zaptest.NewLogger(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	e.publish(migration(t, "shop", 1, schema.String()))
	e.waitVersion("shop", 1)
	attempts, err := streams.Attempts(context.Background(), e.js)
	if err != nil {
		t.Fatal(err)
	}
	// About a second of interpreting: an exception block that changes
	// the catalog on every turn copies 3,000 tables each time.
	e.publish(migration(t, "shop", 2, `DO $$ BEGIN FOR i IN 1..100000 LOOP
  BEGIN EXECUTE 'COMMENT ON TABLE t1 IS ''' || i || ''''; EXCEPTION WHEN others THEN NULL; END;
END LOOP; END $$;
CREATE TABLE after_the_loop ();`))
	testenv.Eventually(t, 10*time.Second, "the migration is being applied", func() bool {
		_, err := attempts.Get(context.Background(), "ev.2")
		return err == nil
	})
	stop() // SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(cfg.ShutdownTimeout):
		t.Fatal("the worker did not stop")
	}
	if v := e.version("shop"); v != 1 {
		t.Fatalf("catalog at version %d after the stop: the cut apply was written", v)
	}
	e.startWorker(cfg, e.store)
	testenv.Eventually(t, 2*time.Minute, "the next worker applied the migration", func() bool { return e.version("shop") == 2 })
	c, _, err := e.cats.Get(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range c.Drift() {
		if strings.Contains(d.Error, "cancel") {
			t.Errorf("drift of the cut: %s", d)
		}
	}
}
