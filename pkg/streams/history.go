package streams

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
)

// CatalogHistory decodes the history of a catalog bucket entry without
// decoding its catalog, reading the object an entry of the object form
// names (a catalog too big for its entry). The version is the entry
// header's, which an object's body does not hold.
func CatalogHistory(ctx context.Context, js jetstream.JetStream, e jetstream.KeyValueEntry) (*events.CatalogHistory, error) {
	b := e.Value()
	h, err := events.DecodeCatalogHistory(b)
	if errors.Is(err, events.ErrCatalogInObject) {
		name, nerr := events.CatalogEntryObjectName(b)
		if nerr != nil {
			return nil, fmt.Errorf("read catalog %s (revision %d): %w", e.Key(), e.Revision(), nerr)
		}
		obj, oerr := Objects(ctx, js)
		if oerr != nil {
			return nil, oerr
		}
		if b, err = obj.GetBytes(ctx, name); err != nil {
			return nil, fmt.Errorf("read catalog %s from object %s: %w", e.Key(), name, err)
		}
		h, err = events.DecodeCatalogHistory(b)
	}
	if err != nil {
		return nil, fmt.Errorf("read catalog %s (revision %d): %w", e.Key(), e.Revision(), err)
	}
	if v, ok := events.CatalogEntryVersion(e.Value()); ok {
		h.Version = v
	}
	h.Database = e.Key()
	return h, nil
}
