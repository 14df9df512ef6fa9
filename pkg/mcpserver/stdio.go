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
}

// Connect starts the filter and returns the SDK's connection over the
// lines that pass it.
func (t *LineTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, pw := io.Pipe()
	out := &lockedWriter{w: t.Out}
	go t.filter(pw, out)
	return (&mcp.IOTransport{Reader: pr, Writer: out}).Connect(ctx)
}

// filter copies each line that decodes as JSON-RPC to pw, answers the
// others on out, and closes pw at the end of the input.
func (t *LineTransport) filter(pw *io.PipeWriter, out io.Writer) {
	r := bufio.NewReaderSize(t.In, 64<<10)
	for n := 1; ; n++ {
		line, tooLong, err := readLine(r, MaxLineBytes)
		switch {
		case tooLong:
			t.refuse(out, n, nil, codeParseError, fmt.Sprintf("Parse error: line %d is longer than %d bytes", n, MaxLineBytes))
		case len(bytes.TrimSpace(line)) > 0:
			if id, code, reason := check(line); code != 0 {
				t.refuse(out, n, id, code, fmt.Sprintf("%s (line %d)", reason, n))
			} else if _, werr := pw.Write(append(line, '\n')); werr != nil {
				return // the session is closed
			}
		}
		if err != nil {
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
// whole: each Write is one line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close closes nothing: stdout outlives the session.
func (l *lockedWriter) Close() error { return nil }
