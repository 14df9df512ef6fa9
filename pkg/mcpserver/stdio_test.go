package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLineTransportGoesOnAfterBadLines feeds a real MCP server raw lines,
// good and bad, as a careless host would: each bad line gets its JSON-RPC
// error and the requests around it are answered.
func TestLineTransportGoesOnAfterBadLines(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
		`hello`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		``,
		`{"jsonrpc":"1.0","id":7,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"x1","method":"tools/list"}`,
		`[]`,
		`{"jsonrpc":"2.0","id":8,"method":"ping"`,
		`{"jsonrpc":"2.0","id":9,"method":"ping"}`,
		strings.Repeat("x", MaxLineBytes+10),
		`{"jsonrpc":"2.0","id":10,"method":"ping"}`,
	}
	// Each answer, by the request id it carries (null for lines with none).
	want := []struct {
		id   any
		code float64 // 0: a result
	}{
		{float64(1), 0},
		{nil, codeParseError},
		{float64(7), codeInvalidRequest},
		{"x1", 0},
		{nil, codeInvalidRequest},
		{nil, codeParseError},
		{float64(9), 0},
		{nil, codeParseError},
		{float64(10), 0},
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	var refused int
	tr := &LineTransport{In: inR, Out: outW, OnRefused: func(int, int, string) { refused++ }}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, tr) }()
	go func() {
		for _, l := range lines {
			if _, err := io.WriteString(inW, l+"\n"); err != nil {
				return
			}
		}
	}()
	// Requests are answered concurrently, so the answers are compared as
	// a set of (id, code).
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	var gotKeys, wantKeys []string
	for _, w := range want {
		wantKeys = append(wantKeys, fmt.Sprintf("%v/%v", w.id, w.code))
	}
	for i := range want {
		if !sc.Scan() {
			t.Fatalf("answer %d: the session ended: %v", i, sc.Err())
		}
		var got struct {
			ID     any             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code float64 `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("answer %d is not JSON: %s", i, sc.Bytes())
		}
		code := float64(0)
		if got.Error != nil {
			code = got.Error.Code
		} else if got.Result == nil {
			t.Errorf("answer %d has neither result nor error: %s", i, sc.Bytes())
		}
		gotKeys = append(gotKeys, fmt.Sprintf("%v/%v", got.ID, code))
	}
	slices.Sort(gotKeys)
	slices.Sort(wantKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("answers (id/code) %v, want %v", gotKeys, wantKeys)
	}
	inW.Close()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Logf("session ended: %v", err)
	}
	if refused != 5 {
		t.Errorf("%d lines reported refused, want 5", refused)
	}
}

// TestLineTransportAnswersWhatItReadBeforeEOF: a host that writes its
// requests and closes stdin at once (a script, a pipe) gets every
// answer. Closing the session at the end of the input dropped the
// replies still pending, initialize's included.
func TestLineTransportAnswersWhatItReadBeforeEOF(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}, "\n") + "\n"
	var out strings.Builder
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	tr := &LineTransport{In: strings.NewReader(in), Out: &out}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := server.Run(ctx, tr); err != nil && ctx.Err() != nil {
		t.Fatalf("run: %v", err)
	}
	var ids []string
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage
			Result json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Result == nil {
			t.Errorf("not a result: %s", sc.Text())
			continue
		}
		ids = append(ids, string(m.ID))
	}
	slices.Sort(ids)
	if want := []string{`"three"`, "1", "2", "4"}; !slices.Equal(ids, want) {
		t.Fatalf("answered %v, want %v; output:\n%s", ids, want, out.String())
	}
}
