package server

import (
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/configs/loader"
	"github.com/gatehouse-dev/gatehouse/faces"
	blobface "github.com/gatehouse-dev/gatehouse/faces/blob"
	"github.com/gatehouse-dev/gatehouse/state/blob"
)

// The blobs section: the DataRef store, its endpoint under /blobs/ on the boundary listener
// (faces/blob) and the Refs that issue its URLs (the agent link's blob.Issuer). Like the
// state store they are the process's: built at start, a change of the section takes effect
// on restart.

// blobService is what the blobs section built; nil when the section is absent.
type blobService struct {
	cfg    blob.Config // signing_key cleared: the key lives in the signer only
	store  blob.Store
	signer *blob.Signer
	face   *blobface.Face
	refs   *blob.Refs // set once the boundary's address is known (issueBlobs)
}

// blobGateway is the server as the blob face sees it.
type blobGateway struct{ *Server }

// Acquire returns the configuration in force.
func (g blobGateway) Acquire() faces.Runtime { return g.acquire() }

// validateBlobs applies the section's defaults and positions its problems in doc.
func (c *Config) validateBlobs(doc *loader.Document) loader.ErrorList {
	if c.Blobs == nil {
		return nil
	}
	*c.Blobs = c.Blobs.WithDefaults()
	return sectionErrors(doc, "blobs", c.Blobs.Validate())
}

// openBlobs opens the store and the endpoint of cfg's blobs section, if any. A relative
// directory is relative to the configuration file's.
func (s *Server) openBlobs(cfg *Config) error {
	if cfg.Blobs == nil {
		return nil
	}
	c := *cfg.Blobs
	if c.Store == blob.StoreDir && !filepath.IsAbs(c.Dir) && cfg.File() != "" {
		c.Dir = filepath.Join(filepath.Dir(cfg.File()), c.Dir)
	}
	store, err := c.OpenStore(s.opts.Now)
	if err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	key := []byte(c.SigningKey)
	if len(key) == 0 {
		s.log.Warn("blobs.signing_key is not set: blob URLs are signed with a random key, which only this process knows; replicas must share one key")
		key = blob.RandomKey()
	}
	signer, err := blob.NewSigner(key, s.opts.Now)
	if err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	c.SigningKey = ""
	s.blobs = &blobService{cfg: c, store: store, signer: signer, face: blobface.New(blobface.Options{
		Store: store, Signer: signer, Gateway: blobGateway{s}, WriteScope: c.WriteScope, ReadScope: c.ReadScope, Log: s.log,
	})}
	return nil
}

// issueBlobs builds the Refs once the boundary is bound: without blobs.public_url, URLs name
// the boundary's own scheme and address. What it checks was validated with the section, so
// it cannot fail but for a bug, which it logs: no DataRef is then issued.
func (s *Server) issueBlobs() {
	if s.blobs == nil {
		return
	}
	public := s.blobs.cfg.PublicURL
	if public == "" {
		public = scheme(s.tls.boundary) + "://" + s.boundaryLn.Addr().String()
	}
	refs, err := blob.NewRefs(blob.RefsOptions{
		Store: s.blobs.store, Signer: s.blobs.signer, PublicURL: public, TTL: s.blobs.cfg.URLTTL,
		Presign: s.blobs.cfg.Presign(), Now: s.opts.Now,
	})
	if err != nil {
		s.log.Error("blobs: no DataRef URLs can be issued", "err", err)
		return
	}
	s.blobs.refs = refs
}

// blobHandler is the boundary's handler of /blobs/: a nil face (no blobs section) answers 404.
func (s *Server) blobHandler() http.Handler {
	if s.blobs == nil {
		return (*blobface.Face)(nil)
	}
	return s.blobs.face
}

// BlobRefs returns the issuer of DataRef URLs, nil without a blobs section.
func (s *Server) BlobRefs() *blob.Refs {
	if s.blobs == nil {
		return nil
	}
	return s.blobs.refs
}
