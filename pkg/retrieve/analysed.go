package retrieve

import (
	"strings"

	"github.com/schemaq/schemaq/pkg/kept"
	"github.com/schemaq/schemaq/pkg/rerank"
)

// maxAnalysed bounds the readings kept: the tables that reach the
// rescoring's window question after question are a few hundred in most
// databases, and a reading is a few kilobytes.
const maxAnalysed = 2048

// analysedCache keeps the rescoring's reading of candidates
// (rerank.Analyse) by their chunks' content: analysing the DDL of the
// five candidates was a fifth of a question's time, and the same tables
// reach the window again and again. A chunk's hash covers its content,
// so a table changed by a migration is read anew. When full it starts
// over, which costs one reading per table.
type analysedCache struct{ kept kept.Map[*rerank.Analysed] }

func newAnalysedCache() *analysedCache {
	return &analysedCache{kept: kept.Map[*rerank.Analysed]{Max: maxAnalysed}}
}

func (c *analysedCache) get(cand *rerank.Candidate) *rerank.Analysed {
	var key strings.Builder
	key.WriteString(cand.Kind + "\x00" + cand.Name + "\x00" + cand.Schema)
	for _, ch := range cand.Chunks {
		if ch.Hash == "" {
			return rerank.Analyse(cand) // nothing says the content is the same
		}
		key.WriteString("\x00" + ch.ID + "\x00" + ch.Hash)
	}
	return c.kept.Get(key.String(), func() *rerank.Analysed { return rerank.Analyse(cand) })
}
