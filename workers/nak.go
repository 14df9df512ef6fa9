package workers

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/pkg/streams"
)

// Retries are naks with a delay, after which JetStream redelivers the
// event. A plain nak is a publish that nobody confirms: one that reaches
// the cluster while the consumer's leader is being elected (its node just
// died) is lost, and the event stays delivered and pending until AckWait
// ends (30 s), with every event of its database behind it. The outside
// runs of a killed node showed exactly that stall. So a nak is sent as a
// request, which the consumer's leader answers once it has taken it (as
// it answers a DoubleAck), and sent again while it goes unanswered: naks
// repeat harmlessly, each one only setting when the event comes back.
func (w *Worker) nak(msg jetstream.Msg, delay time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), nakFor)
	defer cancel()
	// JetStream's ack protocol, as nats.go's NakWithDelay writes it.
	body := fmt.Appendf(nil, "-NAK {\"delay\": %d}", delay.Nanoseconds())
	_, err := streams.Retried(ctx, nakAttempt, func(ctx context.Context) (*nats.Msg, error) {
		return w.js.Conn().RequestWithContext(ctx, msg.Reply(), body)
	})
	return err
}

const (
	// nakAttempt bounds one nak: the leader answers at once.
	nakAttempt = 2 * time.Second
	// nakFor bounds a nak's retries, about an election's length; the
	// event is redelivered after AckWait even if none landed.
	nakFor = 10 * time.Second
)

// retryAfter naks msg for redelivery after delay, saying so when no nak
// landed.
func (w *Worker) retryAfter(msg jetstream.Msg, delay time.Duration, log *zap.Logger) {
	if err := w.nak(msg, delay); err != nil {
		log.Warn("retry not confirmed by the consumer: the event comes back after the ack wait", zap.Duration("ack_wait", w.cfg.Consumer.AckWait), zap.Error(err))
	}
}
