package retrieve

import "github.com/schemaq/schemaq/events"

// Explain is one candidate's path through the pipeline: the wire type,
// so clients decode what the daemon explains into the same shape.
type Explain = events.ExplainItem

// explain records every candidate's way through the stages, and the
// bridges expansion added, with the ranks they ended at.
func (p *run) explain() {
	final := map[string]int{}
	for i, it := range p.res.Items {
		final[it.Kind+"\x00"+it.Name] = i + 1
	}
	for _, o := range p.all {
		o.ex.FinalRank = final[o.key]
		p.res.Explain = append(p.res.Explain, o.ex)
	}
	for i, it := range p.res.Items {
		if it.Bridge != "" {
			p.res.Explain = append(p.res.Explain, Explain{Kind: it.Kind, Name: it.Name, FinalRank: i + 1, Bridge: it.Bridge})
		}
	}
}
