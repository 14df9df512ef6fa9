package daemon_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestTraceContinuesFromTheCaller: a caller's trace crosses NATS in the
// traceparent header, to the worker that applies what it published and to
// the daemon that answers its search.
func TestTraceContinuesFromTheCaller(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	})
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil)
	ctx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	ev, err := events.New("m1", "shop", time.Now(), &events.Migration{Seq: 1, Source: "0001.sql", SQL: "CREATE TABLE orders (id int PRIMARY KEY, total numeric);"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cli.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "shop indexed", func() bool {
		p, _ := r.store.Projected(context.Background(), "shop")
		return p == 1
	})
	if _, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "order totals"}); err != nil {
		t.Fatal(err)
	}
	caller.End()
	want := caller.SpanContext()
	byName := map[string]sdktrace.ReadOnlySpan{}
	testenv.Eventually(t, 5*time.Second, "the worker's and the daemon's spans ended", func() bool {
		for _, s := range rec.Ended() {
			byName[s.Name()] = s
		}
		return byName["schemaq.event schema.migration"] != nil && byName["schemaq.search"] != nil
	})
	for _, name := range []string{"schemaq.event schema.migration", "schemaq.search"} {
		s := byName[name]
		if s.SpanContext().TraceID() != want.TraceID() || s.Parent().SpanID() != want.SpanID() || !s.Parent().IsRemote() {
			t.Errorf("%s: trace %s parent %s (remote %v), want a remote child of the caller's span %s in trace %s",
				name, s.SpanContext().TraceID(), s.Parent().SpanID(), s.Parent().IsRemote(), want.SpanID(), want.TraceID())
		}
	}
	ret := byName["retrieve"]
	if ret == nil || ret.Parent().SpanID() != byName["schemaq.search"].SpanContext().SpanID() {
		t.Errorf("retrieve is not a child of the search span: %v", ret)
	}
	for _, stage := range []string{"gather", "fuse", "rerank", "expand"} {
		if s := byName[stage]; s == nil || s.Parent().SpanID() != ret.SpanContext().SpanID() {
			t.Errorf("stage %s is not a child of retrieve", stage)
		}
	}
}
