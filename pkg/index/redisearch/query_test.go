package redisearch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/text"
)

// offline is a Store whose client never connects: commands are queued on
// a pipeline only to read the arguments they would send.
func offline(t *testing.T, opt Options) (*Store, redis.Pipeliner) {
	t.Helper()
	if opt.Prefix == "" {
		opt.Prefix = "schemaq:"
	}
	if opt.Algorithm == "" {
		opt.Algorithm = "HNSW"
	}
	if opt.Weights == (index.Weights{}) {
		opt.Weights = index.DefaultWeights
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { rdb.Close() })
	return withVersion(&Store{rdb: rdb, opt: opt, spec: specOf(opt), scorer: "BM25STD"}, 3), rdb.Pipeline()
}

func argStrings(args []any) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case []byte:
			out[i] = fmt.Sprintf("<%d bytes>", len(a))
		default:
			out[i] = fmt.Sprint(a)
		}
	}
	return out
}

func TestCreateArgs(t *testing.T) {
	for _, tc := range []struct {
		algorithm string
		vector    []string
	}{
		{"HNSW", []string{"embedding", "VECTOR", "HNSW", "6", "TYPE", "FLOAT32", "DIM", "512", "DISTANCE_METRIC", "COSINE"}},
		{"FLAT", []string{"embedding", "VECTOR", "FLAT", "6", "TYPE", "FLOAT32", "DIM", "512", "DISTANCE_METRIC", "COSINE"}},
	} {
		s, pipe := offline(t, Options{Dimensions: 512, Algorithm: tc.algorithm})
		name, opts, schema := s.createArgs(3)
		got := argStrings(pipe.FTCreate(context.Background(), name, opts, schema...).Args())
		want := append([]string{"FT.CREATE", "schemaq:idx:v3", "ON", "HASH", "PREFIX", "1", "schemaq:v3:c:", "STOPWORDS", "0", "SCHEMA",
			"db", "TAG", "kind", "TAG", "schema", "TAG", "tags", "TAG",
			"name", "TEXT", "NOSTEM", "WEIGHT", "4", "schema_terms", "TEXT", "NOSTEM", "WEIGHT", "1.5",
			"columns", "TEXT", "NOSTEM", "WEIGHT", "2", "body", "TEXT", "NOSTEM", "WEIGHT", "1"}, tc.vector...)
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.algorithm, got, want)
		}
	}
}

func TestAliasArgs(t *testing.T) {
	s, pipe := offline(t, Options{Dimensions: 8})
	ctx := context.Background()
	for _, tc := range []struct {
		got, want []string
	}{
		{argStrings(pipe.FTAliasAdd(ctx, s.indexName(1), s.alias()).Args()), []string{"FT.ALIASADD", "schemaq:idx", "schemaq:idx:v1"}},
		{argStrings(pipe.FTAliasUpdate(ctx, s.indexName(4), s.alias()).Args()), []string{"FT.ALIASUPDATE", "schemaq:idx", "schemaq:idx:v4"}},
		{argStrings(pipe.FTDropIndexWithArgs(ctx, s.indexName(3), &redis.FTDropIndexOptions{DeleteDocs: true}).Args()), []string{"FT.DROPINDEX", "schemaq:idx:v3", "DD"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestTextSearchArgs(t *testing.T) {
	s, pipe := offline(t, Options{Dimensions: 8})
	q := index.TextQuery{Filter: index.Filter{Database: "shop", Kinds: []string{chunk.KindTable, chunk.KindView},
		Tags: map[string]string{"product": "checkout"}}, Terms: text.Terms("Which car makers' orders?"), Weights: index.DefaultWeights, Limit: 50}
	expr, opts := s.textSearchArgs(q)
	got := argStrings(pipe.FTSearchWithArgs(context.Background(), s.alias(), expr, opts).Args())
	filter := "@db:{" + hexTag("shop") + "} @kind:{" + hexTag("table") + "|" + hexTag("view") + "} @tags:{" + hexTag("product=checkout") + "}"
	var alts []string
	for _, term := range []string{"car", "maker", "order", "carmaker", "makerorder"} {
		alts = append(alts, "("+filter+" "+term+")")
	}
	want := []string{"FT.SEARCH", "schemaq:idx", strings.Join(alts, " | "), "WITHSCORES",
		"RETURN", "12", "id", "db", "kind", "schema", "object", "part", "title", "column_list", "text", "tag_map", "hash", "version",
		"SCORER", "BM25STD", "LIMIT", "0", "50", "DIALECT", "2"}
	if !slices.Equal(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}

	// Weights other than the index's become per-field clause weights.
	q.Weights = index.Weights{Name: 8, Schema: 1.5, Columns: 1, Body: 0}
	q.Filter = index.Filter{Database: "shop"}
	q.Terms = []string{"order"}
	expr, _ = s.textSearchArgs(q)
	db := "@db:{" + hexTag("shop") + "}"
	wantExpr := "(" + db + " @name:order) => { $weight: 2; } | (" + db + " @schema_terms:order) => { $weight: 1; } | (" + db + " @columns:order) => { $weight: 0.5; }"
	if expr != wantExpr {
		t.Errorf("weighted:\n got %s\nwant %s", expr, wantExpr)
	}
}

// Whatever the terms, the query holds only the filter, letters, digits
// and the union syntax we wrote.
func TestHostileTermsStayText(t *testing.T) {
	s, _ := offline(t, Options{Dimensions: 8})
	for _, terms := range [][]string{
		{`"`}, {`orders"`, `OR`, `"x`}, {"@db:{x}"}, {"*"}, {"-orders"}, {"~a", "%b%"}, {"$vec"}, {"=>[KNN 5 @embedding $vec]"},
		{`\`}, {"a|b", "(c)"}, {"ordérs", "日本語"}, {""}, {},
	} {
		expr, _ := s.textSearchArgs(index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: terms, Limit: 5})
		if expr == "" {
			continue
		}
		prefix := "(@db:{" + hexTag("shop") + "} "
		for _, alt := range strings.Split(expr, " | ") {
			if !strings.HasPrefix(alt, prefix) || !strings.HasSuffix(alt, ")") {
				t.Errorf("%q: %s", terms, expr)
				continue
			}
			for _, r := range strings.TrimSuffix(strings.TrimPrefix(alt, prefix), ")") {
				if !strconv.IsPrint(r) || strings.ContainsRune(`"@{}*-~%$=>[]\()| `, r) {
					t.Errorf("%q: syntax %q reached the query %s", terms, r, expr)
				}
			}
		}
	}
}

func TestVectorSearchArgs(t *testing.T) {
	s, pipe := offline(t, Options{Dimensions: 4})
	q := index.VectorQuery{Filter: index.Filter{Database: "shop", Schemas: []string{"public"}}, Vector: []float32{1, 0, 0, 0}, Limit: 50}
	expr, opts := s.vectorSearchArgs(q)
	args := pipe.FTSearchWithArgs(context.Background(), s.alias(), expr, opts).Args()
	got := argStrings(args)
	want := []string{"FT.SEARCH", "schemaq:idx", "(@db:{" + hexTag("shop") + "} @schema:{" + hexTag("public") + "})=>[KNN 50 @embedding $vec AS knn_dist]",
		"RETURN", "13", "id", "db", "kind", "schema", "object", "part", "title", "column_list", "text", "tag_map", "hash", "version", "knn_dist",
		"SORTBY", "knn_dist", "ASC", "LIMIT", "0", "50", "PARAMS", "2", "vec", "<16 bytes>", "DIALECT", "2"}
	if !slices.Equal(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
	if blob := args[len(args)-3].([]byte); !slices.Equal(index.DecodeVector(blob), q.Vector) {
		t.Error("the vector blob is not little-endian FLOAT32")
	}
}

func TestHybridArgs(t *testing.T) {
	s, pipe := offline(t, Options{Dimensions: 4})
	q := HybridQuery{Text: index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"order"}}, Vector: []float32{0, 1, 0, 0}, Window: 50, K: 60, Limit: 15}
	got := argStrings(pipe.FTHybridWithArgs(context.Background(), s.alias(), s.hybridArgs(q)).Args())
	db := "@db:{" + hexTag("shop") + "}"
	want := []string{"FT.HYBRID", "schemaq:idx", "SEARCH", "(" + db + " order)", "SCORER", "BM25STD",
		"VSIM", "@embedding", "$vec", "KNN", "2", "K", "50", "FILTER", db,
		"COMBINE", "RRF", "6", "WINDOW", "50", "CONSTANT", "60", "YIELD_SCORE_AS", "rrf",
		"LOAD", "12", "@id", "@db", "@kind", "@schema", "@object", "@part", "@title", "@column_list", "@text", "@tag_map", "@hash", "@version",
		"LIMIT", "0", "15", "PARAMS", "2", "vec", "<16 bytes>"}
	if !slices.Equal(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}

func TestFuseRRF(t *testing.T) {
	h := func(id string) index.Hit { return index.Hit{Chunk: chunk.Chunk{ID: id}} }
	for _, tc := range []struct {
		name        string
		text, knn   []index.Hit
		limit       int
		want        []string
		firstScore  float64
		description string
	}{
		{"both lists agree", []index.Hit{h("a"), h("b")}, []index.Hit{h("a"), h("c")}, 10, []string{"a", "b", "c"}, 2.0 / 61, ""},
		{"in both beats first in one", []index.Hit{h("x"), h("b")}, []index.Hit{h("y"), h("b")}, 10, []string{"b", "x", "y"}, 2.0 / 62, ""},
		{"ties go to the id", []index.Hit{h("z")}, []index.Hit{h("m")}, 1, []string{"m"}, 1.0 / 61, ""},
		{"empty", nil, nil, 5, []string{}, 0, ""},
	} {
		got := FuseRRF(60, tc.limit, tc.text, tc.knn)
		ids := make([]string, len(got))
		for i, g := range got {
			ids[i] = g.Chunk.ID
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, ids, tc.want)
		}
		if len(got) > 0 && (got[0].Score-tc.firstScore > 1e-12 || tc.firstScore-got[0].Score > 1e-12) {
			t.Errorf("%s: first score %v, want %v", tc.name, got[0].Score, tc.firstScore)
		}
	}
}

// Replies as the server sends them, in RESP2 and in RESP3, parsed by
// go-redis and hydrated into hits. The bytes are transcribed from the
// documented reply formats of FT.SEARCH; a replay peer on a net.Pipe
// answers the connection handshake and then the search.
func TestParsesSearchRepliesInBothProtocols(t *testing.T) {
	bulk := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	fields := []string{"id", "shop:table:public.orders", "db", hexTag("shop"), "kind", hexTag("table"), "schema", hexTag("public"),
		"object", "public.orders", "part", "0", "title", "orders", "column_list", `["id","status"]`, "text", "CREATE TABLE public.orders (id bigint, status text)",
		"tag_map", "{}", "hash", "h1", "version", "4"}
	var pairs strings.Builder
	for _, f := range fields {
		pairs.WriteString(bulk(f))
	}
	n := strconv.Itoa(len(fields))
	resp2 := "*5\r\n:2\r\n" + bulk("schemaq:v3:c:shop:table:public.orders") + bulk("2.75") + "*" + n + "\r\n" + pairs.String() +
		// a document deleted between matching and loading comes back as a null
		bulk("schemaq:v3:c:shop:table:public.gone") + bulk("1.5") + "*-1\r\n"
	resp3 := "%5\r\n" + "+attributes\r\n*0\r\n" + "+warning\r\n*0\r\n" + "+total_results\r\n:1\r\n" + "+format\r\n+STRING\r\n" +
		"+results\r\n*1\r\n%4\r\n" + "+id\r\n" + bulk("schemaq:v3:c:shop:table:public.orders") + "+score\r\n,2.75\r\n" +
		"+extra_attributes\r\n%" + strconv.Itoa(len(fields)/2) + "\r\n" + pairs.String() + "+values\r\n*0\r\n"
	for _, tc := range []struct {
		protocol int
		reply    string
	}{{2, resp2}, {3, resp3}} {
		t.Run(fmt.Sprintf("RESP%d", tc.protocol), func(t *testing.T) {
			rdb := replay(t, tc.protocol, map[string][]string{"FT.SEARCH": {tc.reply}})
			s := withVersion(&Store{rdb: rdb, opt: Options{Prefix: "schemaq:", Dimensions: 4, Weights: index.DefaultWeights}, scorer: "BM25STD"}, 3)
			hits, err := s.SearchText(context.Background(), index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"order"}, Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != 1 {
				t.Fatalf("%d hits, want 1 (the deleted one skipped)", len(hits))
			}
			c := hits[0].Chunk
			if hits[0].Score != 2.75 || c.ID != "shop:table:public.orders" || c.Database != "shop" || c.Kind != "table" || c.Schema != "public" ||
				c.Name != "public.orders" || c.Title != "orders" || !slices.Equal(c.Columns, []string{"id", "status"}) || c.Version != 4 || c.Tags != nil {
				t.Errorf("hit %+v score %v", c, hits[0].Score)
			}
		})
	}
}

// replay returns a client whose every connection is a net.Pipe to a
// goroutine that answers HELLO and CLIENT as a server of the given
// protocol does, and each other command with its transcribed replies, in
// turn (the last one repeats).
func replay(t *testing.T, protocol int, replies map[string][]string) *redis.Client {
	var mu sync.Mutex
	served := map[string]int{}
	hello := map[int]string{
		2: "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n8.2.0\r\n$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
		3: "%7\r\n+server\r\n+redis\r\n+version\r\n+8.2.0\r\n+proto\r\n:3\r\n+id\r\n:7\r\n+mode\r\n+standalone\r\n+role\r\n+master\r\n+modules\r\n*0\r\n",
	}[protocol]
	rdb := redis.NewClient(&redis.Options{Protocol: protocol, DisableIdentity: true, MaxRetries: -1, PoolSize: 1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() {
				defer server.Close()
				r := bufio.NewReader(server)
				for {
					cmd, err := readCommand(r)
					if err != nil {
						return
					}
					name := strings.ToUpper(cmd)
					mu.Lock()
					list, ok := replies[name]
					var reply string
					if ok {
						reply = list[min(served[name], len(list)-1)]
						served[name]++
					}
					mu.Unlock()
					switch {
					case strings.EqualFold(cmd, "HELLO"):
						reply = hello
					case !ok:
						reply = "+OK\r\n"
					}
					if _, err := io.WriteString(server, reply); err != nil {
						return
					}
				}
			}()
			return client, nil
		}})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// readCommand reads one RESP array of bulk strings and returns its first
// element.
func readCommand(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil {
		return "", fmt.Errorf("not an array: %q", line)
	}
	var first string
	for i := 0; i < n; i++ {
		hdr, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(hdr, "$")))
		if err != nil {
			return "", fmt.Errorf("not a bulk string: %q", hdr)
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		if i == 0 {
			first = string(buf[:size])
		}
	}
	return first, nil
}

// FT.HYBRID replies in both protocols, through go-redis's parser, into
// fused hits scored by the yielded RRF score.
func TestParsesHybridRepliesInBothProtocols(t *testing.T) {
	bulk := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	fields := []string{"id", "shop:table:public.orders", "db", hexTag("shop"), "kind", hexTag("table"), "schema", hexTag("public"),
		"object", "public.orders", "part", "0", "title", "orders", "column_list", `["id"]`, "text", "CREATE TABLE public.orders (id bigint)",
		"tag_map", "{}", "hash", "h1", "version", "2", "rrf", "0.0327"}
	var pairs strings.Builder
	for _, f := range fields {
		pairs.WriteString(bulk(f))
	}
	n := strconv.Itoa(len(fields))
	resp2 := "*8\r\n" + bulk("total_results") + ":1\r\n" + bulk("results") + "*1\r\n*" + n + "\r\n" + pairs.String() +
		bulk("warnings") + "*0\r\n" + bulk("execution_time") + bulk("0.25")
	resp3 := "%4\r\n+total_results\r\n:1\r\n+results\r\n*1\r\n%" + strconv.Itoa(len(fields)/2) + "\r\n" + pairs.String() +
		"+warnings\r\n*0\r\n+execution_time\r\n,0.25\r\n"
	for _, tc := range []struct {
		protocol int
		reply    string
	}{{2, resp2}, {3, resp3}} {
		t.Run(fmt.Sprintf("RESP%d", tc.protocol), func(t *testing.T) {
			rdb := replay(t, tc.protocol, map[string][]string{"FT.HYBRID": {tc.reply}})
			s := withVersion(&Store{rdb: rdb, opt: Options{Prefix: "schemaq:", Dimensions: 4, Weights: index.DefaultWeights}, scorer: "BM25STD", hybrid: true}, 3)
			hits, path, err := s.SearchHybrid(context.Background(), HybridQuery{Text: index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"order"}},
				Vector: []float32{1, 0, 0, 0}, Limit: 5})
			if err != nil || path != PathServer {
				t.Fatalf("%v (%s)", err, path)
			}
			if len(hits) != 1 || hits[0].Chunk.Name != "public.orders" || hits[0].Chunk.Database != "shop" || hits[0].Score != 0.0327 {
				t.Errorf("hits %+v", hits)
			}
		})
	}
}

// A server that refuses FT.HYBRID (an older or changed syntax) is served
// by the client-side fusion, from then on without asking again.
func TestHybridFallsBackOnRefusal(t *testing.T) {
	bulk := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	fields := []string{"id", "shop:table:public.orders", "db", hexTag("shop"), "kind", hexTag("table"), "object", "public.orders", "version", "1"}
	var pairs strings.Builder
	for _, f := range fields {
		pairs.WriteString(bulk(f))
	}
	doc := bulk("schemaq:v3:c:shop:table:public.orders")
	text := "*4\r\n:1\r\n" + doc + bulk("1.5") + "*" + strconv.Itoa(len(fields)) + "\r\n" + pairs.String()
	knn := "*3\r\n:1\r\n" + doc + "*" + strconv.Itoa(len(fields)+2) + "\r\n" + pairs.String() + bulk("knn_dist") + bulk("0.1")
	// The client path sends the text search, then the KNN search.
	rdb := replay(t, 2, map[string][]string{"FT.HYBRID": {"-ERR Unknown argument `VSIM`\r\n"}, "FT.SEARCH": {text, knn, text, knn}})
	s := withVersion(&Store{rdb: rdb, opt: Options{Prefix: "schemaq:", Dimensions: 4, Weights: index.DefaultWeights}, scorer: "BM25STD", hybrid: true}, 3)
	q := HybridQuery{Text: index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"order"}}, Vector: []float32{1, 0, 0, 0}, Limit: 5}
	for i := range 2 {
		hits, path, err := s.SearchHybrid(context.Background(), q)
		if err != nil || path != PathClient || len(hits) != 1 || hits[0].Chunk.ID != "shop:table:public.orders" {
			t.Fatalf("call %d: %v %s %+v", i, err, path, hits)
		}
		// In both lists at rank 1: 2/(60+1).
		if want := 2.0 / 61; hits[0].Score < want-1e-12 || hits[0].Score > want+1e-12 {
			t.Errorf("fused score %v, want %v", hits[0].Score, want)
		}
	}
	if !s.hybridOff {
		t.Error("the refusal was not remembered")
	}
}
