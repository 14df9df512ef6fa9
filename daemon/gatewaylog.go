package daemon

import (
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/schemaq/schemaq/pkg/ask"
	"github.com/schemaq/schemaq/pkg/redact"
)

// gatewayLogEvery bounds how often a failing gateway is logged: a
// gateway that is down fails every ask, and one line per ask would bury
// everything else.
const gatewayLogEvery = 10 * time.Second

// gatewayLog logs the gateway's failures with their status and message,
// at most one line per status every gatewayLogEvery, saying how many it
// left out.
type gatewayLog struct {
	mu   sync.Mutex
	last map[int]time.Time
	left map[int]int
	now  func() time.Time
}

func newGatewayLog() *gatewayLog {
	return &gatewayLog{last: map[int]time.Time{}, left: map[int]int{}, now: time.Now}
}

// failed logs an answer's gateway failure, if it is one.
func (g *gatewayLog) failed(log *zap.Logger, endpoint string, err error) {
	var gf *ask.GatewayFailure
	if !errors.As(err, &gf) {
		return
	}
	status := 0
	var ge *ask.GatewayError
	if errors.As(gf.Err, &ge) {
		status = ge.Status
	}
	g.mu.Lock()
	now := g.now()
	if now.Sub(g.last[status]) < gatewayLogEvery {
		g.left[status]++
		g.mu.Unlock()
		return
	}
	left := g.left[status]
	g.last[status], g.left[status] = now, 0
	g.mu.Unlock()
	fields := []zap.Field{zap.String("endpoint", endpoint), zap.Int("status", status),
		// The gateway's message may quote a URL with a key in it.
		zap.String("error", redact.Text(gf.Error()))}
	if left > 0 {
		fields = append(fields, zap.Int("like_it_since_last_logged", left))
	}
	if status == 401 || status == 403 {
		log.Error("LLM gateway refused the credentials", fields...)
		return
	}
	log.Warn("LLM gateway failed", fields...)
}
