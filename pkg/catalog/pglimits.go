package catalog

// PostgreSQL's own limits, which the catalog enforces as the server does.
// Past them the work one statement costs grows with the square of its
// size (a megabyte of CREATE TABLE with 100,000 columns took 16 s, a
// CREATE INDEX of as many elements minutes), and PostgreSQL refuses the
// statement anyway.
const (
	maxTableColumns = 1600 // MaxHeapAttributeNumber
	maxIndexColumns = 32   // INDEX_MAX_KEYS: keys, foreign keys, indexes
	maxTargetList   = 1664 // MaxTupleAttributeNumber: a query's columns
)

// targetList refuses a query of more columns than PostgreSQL returns.
func targetList(cols []*Column) error {
	if len(cols) > maxTargetList {
		return invalid("target lists can have at most %d entries", maxTargetList)
	}
	return nil
}

// appendColumn adds c as t's last column, within PostgreSQL's bound.
func (t *Table) appendColumn(c *Column) error {
	if len(t.Columns) >= maxTableColumns {
		return invalid("tables can have at most %d columns (%s)", maxTableColumns, t.QualName())
	}
	t.Columns = append(t.Columns, c)
	return nil
}

// indexColumns refuses an index, key or exclusion constraint of more
// columns than PostgreSQL indexes.
func indexColumns(n int) error {
	if n > maxIndexColumns {
		return invalid("cannot use more than %d columns in an index", maxIndexColumns)
	}
	return nil
}
