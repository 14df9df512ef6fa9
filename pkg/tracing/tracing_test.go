package tracing

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace/noop"
)

func TestSetupFollowsTheStandardVariables(t *testing.T) {
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	})
	cases := []struct {
		name    string
		env     map[string]string
		enabled bool
		err     string
	}{
		{"nothing set: nothing exported", nil, false, ""},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, ""},
		{"the SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false, ""},
		{"no exporter", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{"a protocol we do not speak", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, "http/protobuf or grpc"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			shutdown, enabled, err := Setup(context.Background(), func(k string) string { return tc.env[k] }, "test")
			if enabled != tc.enabled || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("enabled %v, err %v; want %v, %q", enabled, err, tc.enabled, tc.err)
			}
			if err := shutdown(context.Background()); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
	}
}

// TestHeadersCarryTheTrace: what Inject writes, Extract reads back, with
// header keys in any case (NATS keeps them as written).
func TestHeadersCarryTheTrace(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator()) })
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, key := range []string{"traceparent", "Traceparent", "TRACEPARENT"} {
		ctx := Extract(context.Background(), nats.Header{key: {parent}})
		h := nats.Header{}
		Inject(ctx, h)
		if got := headerCarrier(h).Get("traceparent"); got != parent {
			t.Errorf("%s: carried %q, want %q", key, got, parent)
		}
	}
	h := nats.Header{}
	Inject(context.Background(), h)
	if len(h) != 0 {
		t.Errorf("a context without a trace wrote %v", h)
	}
}
