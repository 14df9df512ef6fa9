package retrieve

// Explain is one candidate's path through the stages, as the stages
// record it. Ranks are 1-based; 0: the stage did not see or rank it. It
// is retrieval's own record: the daemon converts what replies carry
// (events.ExplainItem), so a field added here for an experiment changes
// no wire contract until the daemon puts it on the wire.
type Explain struct {
	Kind, Name       string
	BM25Rank         int
	BM25Score        float64
	KNNRank          int
	KNNScore         float64
	HintRank         int // in the BM25 list of the request's hints
	HintScore        float64
	IdentifierRank   int    // in the list of tables owning an identifier the text spells out
	Identifier       string // the identifier that named it
	ExampleRank      int    // in the list of tables the most similar examples' SQL reads
	Example          string // the best such example's id
	DocRank          int    // in the list of tables the most similar doc sections name
	Doc              string // the best such section
	SchemaRoute      int    // its schema's rank by routing
	SchemaEvidence   int    // its schema's rank by its best candidate
	SchemaLikelihood int    // its schema's rank by query likelihood
	SchemaByFeatures bool   // its schema was put first by the routing features
	LiftedTo         float64
	FusedRank        int
	FusedScore       float64
	SchemaRank       int // after rescoring
	SchemaScore      float64
	RerankRank       int
	RerankScore      float64
	FinalRank        int
	Bridge           string // why expansion added it
	Placed           string // why expansion placed it among the k
}

// explain records every candidate's way through the stages, and the
// tables expansion added or placed, with the ranks they ended at.
func (p *run) explain() {
	final := map[string]int{}
	for i, it := range p.res.Items {
		final[it.Kind+"\x00"+it.Name] = i + 1
	}
	// A candidate expansion moved up says why in its own record; a table
	// no list ranked gets one of its own.
	moved := map[string]Item{}
	for _, it := range p.res.Items {
		if it.Bridge != "" || it.Placed != "" {
			moved[it.Kind+"\x00"+it.Name] = it
		}
	}
	for _, o := range p.all {
		o.ex.FinalRank = final[o.key]
		if it, ok := moved[o.key]; ok {
			o.ex.Bridge, o.ex.Placed = it.Bridge, it.Placed
			delete(moved, o.key)
		}
		p.res.Explain = append(p.res.Explain, o.ex)
	}
	for i, it := range p.res.Items {
		if _, ok := moved[it.Kind+"\x00"+it.Name]; ok {
			p.res.Explain = append(p.res.Explain, Explain{Kind: it.Kind, Name: it.Name, FinalRank: i + 1, Bridge: it.Bridge, Placed: it.Placed})
		}
	}
}
