// Package tracing sets up OpenTelemetry traces from the standard OTEL_*
// variables and carries trace context over NATS headers (W3C
// traceparent). With no OTLP endpoint configured nothing is set up: the
// global tracer stays OpenTelemetry's no-op, and spans cost a context
// value each.
package tracing

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of schemaq's spans.
const Name = "github.com/schemaq/schemaq"

// Tracer is schemaq's tracer from the global provider.
func Tracer() trace.Tracer { return otel.Tracer(Name) }

// Setup installs an OTLP exporting tracer provider and the W3C
// propagator when getenv names an endpoint (OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), unless OTEL_SDK_DISABLED is
// true or OTEL_TRACES_EXPORTER is none. The protocol is
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
// http/protobuf (the default) or grpc. The exporters read the other
// OTEL_EXPORTER_OTLP_* variables (headers, TLS, timeouts) themselves, and
// the SDK OTEL_TRACES_SAMPLER and OTEL_BSP_*. shutdown flushes what is
// buffered; it is a no-op when nothing was set up.
func Setup(ctx context.Context, getenv func(string) string, role string) (shutdown func(context.Context) error, enabled bool, err error) {
	noop := func(context.Context) error { return nil }
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	signalEndpoint := endpoint != ""
	if endpoint == "" {
		endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if endpoint == "" || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return noop, false, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp *otlptrace.Exporter
	switch protocol {
	case "", "http/protobuf":
		url := endpoint
		if !signalEndpoint {
			// The generic endpoint is a base: traces go to /v1/traces.
			url = strings.TrimSuffix(endpoint, "/") + "/v1/traces"
		}
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url))
	case "grpc":
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint))
	default:
		return noop, false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: schemaq exports traces over http/protobuf or grpc", protocol)
	}
	if err != nil {
		return noop, false, fmt.Errorf("otlp trace exporter: %w", err)
	}
	service := getenv("OTEL_SERVICE_NAME")
	if service == "" {
		service = "schemaq"
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", service), attribute.String("schemaq.role", role)))
	if err != nil {
		res = resource.Default()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return tp.Shutdown, true, nil
}

// headerCarrier adapts NATS headers (and micro's, the same map) to the
// propagators.
type headerCarrier map[string][]string

func (h headerCarrier) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	// NATS keeps header keys as they were written; the propagators
	// write lower case.
	for k, v := range h {
		if strings.EqualFold(k, key) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

func (h headerCarrier) Set(key, value string) { h[key] = []string{value} }

func (h headerCarrier) Keys() []string {
	out := make([]string, 0, len(h))
	for k := range h {
		out = append(out, k)
	}
	return out
}

// Inject writes ctx's trace context into h (traceparent, tracestate): a
// message published or a request sent carries its caller's trace. It
// writes nothing when ctx has no recording span.
func Inject(ctx context.Context, h nats.Header) {
	if h == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	otel.GetTextMapPropagator().Inject(ctx, headerCarrier(h))
}

// Extract returns ctx with the trace context h carries, if any.
func Extract(ctx context.Context, h map[string][]string) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return otel.GetTextMapPropagator().Extract(ctx, headerCarrier(h))
}
