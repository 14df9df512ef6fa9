package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// JSON-RPC 2.0 error codes for input that is not a request.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// MaxLineBytes bounds one line of the stdio transport, as the SDK's own
// transport bounds one frame.
const MaxLineBytes = mcp.DefaultMaxLineLength

// LineTransport is newline-delimited JSON-RPC over a reader and a writer
// (stdin and stdout) that answers a line it cannot take with a JSON-RPC
// error and reads on. The SDK's stdio transport ends the session at the
// first line that is not a JSON-RPC message, so one stray line from an
// agent's host, between two good requests, left both unanswered.
// JSON-RPC asks for -32700 (not JSON) and -32600 (not a request), and for
// the session to go on.
type LineTransport struct {
	In  io.Reader
	Out io.Writer
	// OnRefused, when set, hears of each refused line (for the log).
	OnRefused func(line int, code int, reason string)
	// Drain bounds how long the end of the input waits for the answers
	// to requests read before it (DefaultDrain when zero).
	Drain time.Duration
}

// DefaultDrain is how long a closed input waits for its last answers: an
// ask through a gateway takes seconds.
const DefaultDrain = 2 * time.Minute

// Connect starts the filter and returns the SDK's connection over the
// lines that pass it.
func (t *LineTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, pw := io.Pipe()
	out := &lockedWriter{w: t.Out, open: newInFlight()}
	go t.filter(pw, out)
	return (&mcp.IOTransport{Reader: pr, Writer: out}).Connect(ctx)
}

// filter copies each line that decodes as JSON-RPC to pw, answers the
// others on out, and closes pw at the end of the input, once the
// requests it passed are answered. A host that writes its requests and
// closes stdin (a script, `echo … | schemaq mcp`) gets every answer:
// closing the SDK's input at once ended the session with them unsent,
// initialize's included.
func (t *LineTransport) filter(pw *io.PipeWriter, out *lockedWriter) {
	r := bufio.NewReaderSize(t.In, 64<<10)
	for n := 1; ; n++ {
		line, tooLong, err := readLine(r, MaxLineBytes)
		switch {
		case tooLong:
			t.refuse(out, n, nil, codeParseError, fmt.Sprintf("Parse error: line %d is longer than %d bytes", n, MaxLineBytes))
		case len(bytes.TrimSpace(line)) > 0:
			if id, code, reason := check(line); code != 0 {
				t.refuse(out, n, id, code, fmt.Sprintf("%s (line %d)", reason, n))
			} else {
				out.open.request(line)
				if _, werr := pw.Write(append(line, '\n')); werr != nil {
					return // the session is closed
				}
			}
		}
		if err != nil {
			drain := t.Drain
			if drain <= 0 {
				drain = DefaultDrain
			}
			out.open.wait(drain)
			pw.CloseWithError(eofOr(err))
			return
		}
	}
}

func eofOr(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// readLine reads one line without its newline, up to max bytes; a longer
// line is read to its end and dropped.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

// check returns, for a line the SDK would refuse, the request id (when
// one can be read), the JSON-RPC error code and the reason.
func check(line []byte) (id any, code int, reason string) {
	if !json.Valid(line) {
		return nil, codeParseError, "Parse error: the line is not JSON"
	}
	var probe struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &probe) == nil {
		id = probe.ID
	}
	if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
			return nil, codeInvalidRequest, "Invalid Request: an empty or malformed batch"
		}
		for i, m := range batch {
			if _, err := jsonrpc.DecodeMessage(m); err != nil {
				return nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: batch element %d: %v", i, err)
			}
		}
		return nil, 0, ""
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return id, codeInvalidRequest, "Invalid Request: " + err.Error()
	}
	return nil, 0, ""
}

func (t *LineTransport) refuse(out io.Writer, line int, id any, code int, message string) {
	if t.OnRefused != nil {
		t.OnRefused(line, code, message)
	}
	switch id.(type) {
	case string, float64: // an id JSON-RPC allows; anything else is answered with null
	default:
		id = nil
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}})
	_, _ = out.Write(append(b, '\n'))
}

// lockedWriter keeps the filter's error lines and the SDK's messages
// whole: each Write is one line. It notes the responses that go out.
type lockedWriter struct {
	mu   sync.Mutex
	w    io.Writer
	open *inFlight
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	l.open.answered(p)
	return n, err
}

// inFlight counts the requests passed to the SDK that have no response
// yet, by id.
type inFlight struct {
	mu    sync.Mutex
	ids   map[string]int
	empty chan struct{} // closed and replaced as the count reaches zero
}

func newInFlight() *inFlight { return &inFlight{ids: map[string]int{}} }

// message is what tells a request (method and id) from a response (id,
// result or error).
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func messages(line []byte) []message {
	var one message
	if json.Unmarshal(line, &one) == nil {
		return []message{one}
	}
	var batch []message
	_ = json.Unmarshal(line, &batch)
	return batch
}

func (f *inFlight) request(line []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range messages(line) {
		if m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" {
			f.ids[string(m.ID)]++
		}
	}
}

func (f *inFlight) answered(line []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range messages(bytes.TrimSpace(line)) {
		if m.Method != "" || (m.Result == nil && m.Error == nil) {
			continue
		}
		if k := string(m.ID); f.ids[k] > 0 {
			if f.ids[k]--; f.ids[k] == 0 {
				delete(f.ids, k)
			}
		}
	}
	if len(f.ids) == 0 && f.empty != nil {
		close(f.empty)
		f.empty = nil
	}
}

// wait returns once every request has its response, or after max.
func (f *inFlight) wait(max time.Duration) {
	f.mu.Lock()
	if len(f.ids) == 0 {
		f.mu.Unlock()
		return
	}
	if f.empty == nil {
		f.empty = make(chan struct{})
	}
	empty := f.empty
	f.mu.Unlock()
	select {
	case <-empty:
	case <-time.After(max):
	}
}

// Close closes nothing: stdout outlives the session.
func (l *lockedWriter) Close() error { return nil }
