package streams

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestRacing: what a retry may clear, and what it may not.
func TestRacing(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{jetstream.ErrStreamNameAlreadyInUse, true},
		{&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamNameInUse, Description: "stream name already in use"}, true},
		// A peer that missed a heartbeat comes back.
		{fmt.Errorf("ensure: %w", &jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline"}), true},
		// More replicas than servers never fit.
		{&jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement"}, false},
		{&jetstream.APIError{Code: 400, ErrorCode: 10052, Description: "replicas > 1 not supported in non-clustered mode"}, false},
		{fmt.Errorf("some other failure"), false},
	}
	for _, tt := range tests {
		if got := racing(tt.err); got != tt.want {
			t.Errorf("racing(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
