package mcpface

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Sessions of the MCP face's streamable HTTP transport survive a restart of the gateway
// and a move to another replica. A session ID is a token the gateway signs:
//
//	base64url(payload) "." base64url(HMAC-SHA256(session_key, payload))
//	payload = 16 random bytes | issued at (Unix ms, 8 bytes big-endian)
//	          | the client's capability bits (1 byte) | owner (8 bytes)
//	          | the negotiated protocol version
//
// The owner is the first 8 bytes of SHA-256 of the owner key (gateway.Principal.Owner: the
// token's issuer and subject) of the caller that initialized the session:
// a session ID is bound to its caller, and a request, GET or DELETE presenting it with
// another caller's credential is answered as for an unknown session (404), so a leaked
// session ID is no use without its owner's credential.
//
// so any process holding mcp_face.session_key validates it without shared memory, until
// session_ttl after its issue. What a session's later requests need to know of its
// initialize (client capabilities, client info, protocol version, logging level) is kept
// in a session record in the state store, written on initialize and on logging/setLevel,
// and restored onto the request's session when the process does not know it. Where the
// store lost the record (the embedded store after a restart), the token's own capability
// bits and protocol version stand in for it. DELETE records a revocation in the store until
// the token expires.

// Keys of the session table in the state store; the suffix is the token's random part.
const (
	sessionRecordPrefix  = "mcp-session:"
	sessionRevokedPrefix = "mcp-session-revoked:"
)

// Reasons a session ID is refused; they map to 404, which tells an MCP client to start a
// new session.
var (
	errSessionInvalid = errors.New("mcp session id is malformed or not signed by this gateway")
	errSessionExpired = errors.New("mcp session has expired")
	errSessionRevoked = errors.New("mcp session was terminated")
)

// sessionRecord is what later requests of a session need to know of its initialize.
type sessionRecord struct {
	Capabilities    mcp.ClientCapabilities `json:"capabilities"`
	ProtocolVersion string                 `json:"protocol_version"`
	ClientInfo      mcp.Implementation     `json:"client_info"`
	LogLevel        mcp.LoggingLevel       `json:"log_level,omitempty"`
}

// sessionTable is the MCP session table. Every entry expires with its session's token;
// methods fail only when the store does.
type sessionTable interface {
	// save stores the record of the session named name for ttl.
	save(ctx context.Context, name string, rec sessionRecord, ttl time.Duration) error
	// load returns the record of the session named name; ok is false when there is none.
	load(ctx context.Context, name string) (rec sessionRecord, ok bool, err error)
	// revoke ends a session: its record goes, and a revocation stays for ttl.
	revoke(ctx context.Context, name string, ttl time.Duration) error
	// revoked reports whether the session named name was revoked.
	revoked(ctx context.Context, name string) (bool, error)
}

// kvSessions is the session table over the state store.
type kvSessions struct{ kv state.KV }

var _ sessionTable = kvSessions{}

func (t kvSessions) save(ctx context.Context, name string, rec sessionRecord, ttl time.Duration) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding the mcp session record: %w", err)
	}
	return t.kv.Set(ctx, sessionRecordPrefix+name, b, ttl)
}

func (t kvSessions) load(ctx context.Context, name string) (sessionRecord, bool, error) {
	var rec sessionRecord
	b, ok, err := t.kv.Get(ctx, sessionRecordPrefix+name)
	if err != nil || !ok {
		return rec, false, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, false, fmt.Errorf("decoding the mcp session record: %w", err)
	}
	return rec, true, nil
}

func (t kvSessions) revoke(ctx context.Context, name string, ttl time.Duration) error {
	if err := t.kv.Set(ctx, sessionRevokedPrefix+name, []byte{1}, ttl); err != nil {
		return err
	}
	_, err := t.kv.Delete(ctx, sessionRecordPrefix+name)
	return err
}

func (t kvSessions) revoked(ctx context.Context, name string) (bool, error) {
	_, ok, err := t.kv.Get(ctx, sessionRevokedPrefix+name)
	return ok, err
}

// mcpSessions ties the signer and the table to mcp-go: it resolves the streamable HTTP
// server's session ID manager, restores sessions in its context function, and records
// them from hooks.
type mcpSessions struct {
	signer sessionSigner
	table  sessionTable
	log    *slog.Logger
}

var _ mcpserver.SessionIdManagerResolver = (*mcpSessions)(nil)

// newMCPSessions builds the session machinery of cfg; with no session_key the key is
// random, so sessions end with the process.
func newMCPSessions(cfg Config, kv state.KV, now func() time.Time, log *slog.Logger) *mcpSessions {
	key := []byte(cfg.SessionKey)
	if len(key) == 0 {
		key = make([]byte, MinSessionKeyBytes)
		_, _ = rand.Read(key) // crypto/rand.Read never fails (it crashes the program instead)
	}
	ttl := cfg.SessionTTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	return &mcpSessions{signer: sessionSigner{key: key, ttl: ttl, now: now}, table: kvSessions{kv}, log: log}
}

// ResolveSessionIdManager implements mcpserver.SessionIdManagerResolver. mcp-go passes nil
// when it closes sessions itself (shutdown, its idle sweeper): those must not revoke, so
// that the session lives on after a restart or on another replica.
func (m *mcpSessions) ResolveSessionIdManager(r *http.Request) mcpserver.SessionIdManager {
	if r == nil {
		return serverSessionIDs{m}
	}
	return requestSessionIDs{m: m, ctx: r.Context()}
}

// check verifies a session ID, that the caller of ctx owns it and that it was not
// terminated: errSessionInvalid (also for another caller's session), errSessionExpired,
// errSessionRevoked, or the store's error.
func (m *mcpSessions) check(ctx context.Context, id string) (sessionToken, error) {
	t, err := m.signer.verify(id)
	if err != nil {
		return t, err
	}
	if !callerOwns(ctx, t) {
		return sessionToken{}, errSessionInvalid
	}
	revoked, err := m.table.revoked(ctx, t.name)
	switch {
	case err != nil:
		return t, fmt.Errorf("looking up the mcp session: %w", err)
	case revoked:
		return t, errSessionRevoked
	}
	return t, nil
}

// remaining is how long a token has left to live.
func (m *mcpSessions) remaining(t sessionToken) time.Duration {
	return t.expires(m.signer.ttl).Sub(m.signer.now())
}

// admit checks the session a request names before mcp-go does (which checks only POSTs,
// and answers 404 whatever went wrong): 404 for an invalid, expired or terminated session,
// 503 when the store fails. A POST it admitted is not checked again by Validate. Requests
// of protocol revisions without sessions pass untouched.
func (m *mcpSessions) admit(w http.ResponseWriter, r *http.Request) bool {
	id := r.Header.Get(mcpserver.HeaderKeySessionID)
	if id == "" && r.Method == http.MethodDelete {
		// Nothing to end: mcp-go would hand the empty ID to Terminate and answer 500.
		faces.WriteHTTPError(w, http.StatusBadRequest, gateway.Errorf(schemas.CodeInvalidRequest, "DELETE needs the Mcp-Session-Id of the session to end"), observability.NewTraceID(), faces.EncodingJSON)
		return false
	}
	if id == "" || mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		return true
	}
	_, err := m.check(r.Context(), id)
	switch {
	case err == nil:
		if fr := faceRequestOf(r.Context()); fr != nil {
			fr.sessionChecked = true
		}
		return true
	case errors.Is(err, errSessionInvalid), errors.Is(err, errSessionExpired), errors.Is(err, errSessionRevoked):
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "Unknown or terminated MCP session"), observability.NewTraceID(), faces.EncodingJSON)
	default:
		m.log.Warn("checking an mcp session", "err", err)
		faces.WriteHTTPError(w, http.StatusServiceUnavailable, gateway.Errorf(schemas.CodeUnavailable, "The session store is unavailable"), observability.NewTraceID(), faces.EncodingJSON)
	}
	return false
}

// faceRequest is what the face learned of an HTTP request before mcp-go handles it.
type faceRequest struct {
	body   []byte // the POST body, read before mcp-go saw it
	minted bool   // a session ID was issued for this request (an initialize)
	// sessionChecked is set when admit checked the request's session: Validate need not.
	sessionChecked bool
	refusal        atomic.Pointer[mcpRefusal] // the pipeline refused the tool call this request made (refusal.go); set by the handler while mcp-go may be writing the response
	routed         routed                     // what the checked routing headers say (routing.go)
	lists          listVersions               // the catalog version each list request was built from (listcache.go)
	read           *mcp.CacheableResult       // the upstream's hints on the resources/read it answers (read.go)
	relay          *relayWriter               // the response the face's relayed requests may go on (relay25.go)
}

type faceRequestKey struct{}

func faceRequestOf(ctx context.Context) *faceRequest {
	fr, _ := ctx.Value(faceRequestKey{}).(*faceRequest)
	return fr
}

// requestSessionIDs is the session ID manager of one HTTP request.
type requestSessionIDs struct {
	m   *mcpSessions
	ctx context.Context // the request's: mcp-go's SessionIdManager methods take none
}

// Generate issues the ID of a session being initialized. It runs before mcp-go handles
// the initialize, so it reads the capabilities and protocol version from the body itself.
func (s requestSessionIDs) Generate() string {
	var init struct {
		Params struct {
			ProtocolVersion string                 `json:"protocolVersion"`
			Capabilities    mcp.ClientCapabilities `json:"capabilities"`
		} `json:"params"`
	}
	var version string
	p, _ := s.ctx.Value(principalKey{}).(gateway.Principal)
	fr := faceRequestOf(s.ctx)
	if fr != nil {
		fr.minted = true
		if json.Unmarshal(fr.body, &init) == nil {
			version = mcp.NegotiateLegacyVersion(init.Params.ProtocolVersion)
		}
	}
	return s.m.signer.issue(ownerOf(p), capabilityBits(init.Params.Capabilities), version)
}

// Validate implements mcpserver.SessionIdManager.
func (s requestSessionIDs) Validate(id string) (bool, error) {
	if fr := faceRequestOf(s.ctx); fr != nil && fr.sessionChecked {
		return false, nil
	}
	_, err := s.m.check(s.ctx, id)
	if errors.Is(err, errSessionRevoked) {
		return true, nil
	}
	return false, err
}

// Terminate revokes the session until its token expires (a client's DELETE by its owner).
func (s requestSessionIDs) Terminate(id string) (bool, error) {
	t, err := s.m.signer.verify(id)
	if err != nil {
		return false, err
	}
	if !callerOwns(s.ctx, t) {
		return false, errSessionInvalid
	}
	if err := s.m.table.revoke(s.ctx, t.name, max(s.m.remaining(t), time.Millisecond)); err != nil {
		return false, fmt.Errorf("revoking the mcp session: %w", err)
	}
	return false, nil
}

// serverSessionIDs is the session ID manager mcp-go uses outside requests.
type serverSessionIDs struct{ m *mcpSessions }

func (s serverSessionIDs) Generate() string { return s.m.signer.issue(sessionOwner{}, 0, "") }

func (s serverSessionIDs) Validate(id string) (bool, error) {
	_, err := s.m.signer.verify(id)
	return false, err
}

// Terminate ends nothing: the process lets go of the session, which stays valid.
func (s serverSessionIDs) Terminate(string) (bool, error) { return false, nil }

// versionedSession is the part of mcp-go's sessions that holds the negotiated protocol
// version (mcp-go's own interface for it is unexported).
type versionedSession interface {
	ProtocolVersion() string
	SetProtocolVersion(version string)
}

// sessionProtocolVersion returns the protocol version the MCP session of ctx negotiated;
// "" when ctx has no session or its session has none yet.
func sessionProtocolVersion(ctx context.Context) string {
	if sess, ok := mcpserver.ClientSessionFromContext(ctx).(versionedSession); ok {
		return sess.ProtocolVersion()
	}
	return ""
}

// VersionLabel is the protocol version label of a call over MCP in metrics: the session's
// negotiated version when it is one mcp-go knows, else observability.OtherLabel, so the
// label's values stay a bounded set whatever a client sends.
func VersionLabel(ctx context.Context) string {
	if v := sessionProtocolVersion(ctx); slices.Contains(mcp.ValidProtocolVersions, v) {
		return v
	}
	return observability.OtherLabel
}

// restore is the streamable HTTP context function: a request of a session this process
// did not initialize (after a restart, or on another replica) runs on a fresh session, onto
// which it puts what the session's record (or, without one, its token) says.
func (m *mcpSessions) restore(ctx context.Context, _ *http.Request) context.Context {
	if fr := faceRequestOf(ctx); fr != nil && fr.minted {
		return ctx // an initialize: there is nothing to restore yet
	}
	sess := mcpserver.ClientSessionFromContext(ctx)
	info, ok := sess.(mcpserver.SessionWithClientInfo)
	versioned, vok := sess.(versionedSession)
	if !ok || !vok || versioned.ProtocolVersion() != "" {
		return ctx
	}
	t, err := m.signer.verify(sess.SessionID())
	if err != nil {
		return ctx
	}
	rec, found, err := m.table.load(ctx, t.name)
	if err != nil {
		m.log.Warn("loading an mcp session record", "err", err)
	}
	if !found {
		rec = sessionRecord{Capabilities: capabilitiesOf(t.caps), ProtocolVersion: t.version}
	}
	info.SetClientCapabilities(rec.Capabilities)
	info.SetClientInfo(rec.ClientInfo)
	versioned.SetProtocolVersion(rec.ProtocolVersion)
	if l, ok := sess.(mcpserver.SessionWithLogging); ok && rec.LogLevel != "" {
		l.SetLogLevel(rec.LogLevel)
	}
	return ctx
}

// record adds the hooks that write session records: on initialize, and when the client
// sets its logging level.
func (m *mcpSessions) record(h *mcpserver.Hooks) {
	h.AddAfterInitialize(func(ctx context.Context, _ any, req *mcp.InitializeRequest, res *mcp.InitializeResult) {
		m.save(ctx, sessionRecord{Capabilities: req.Params.Capabilities, ProtocolVersion: res.ProtocolVersion, ClientInfo: req.Params.ClientInfo})
	})
	h.AddAfterSetLevel(func(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		rec := sessionRecord{LogLevel: req.Params.Level}
		sess := mcpserver.ClientSessionFromContext(ctx)
		if info, ok := sess.(mcpserver.SessionWithClientInfo); ok {
			rec.Capabilities, rec.ClientInfo = info.GetClientCapabilities(), info.GetClientInfo()
		}
		if v, ok := sess.(versionedSession); ok {
			rec.ProtocolVersion = v.ProtocolVersion()
		}
		m.save(ctx, rec)
	})
}

// save writes the record of the calling session, if it is one of the streamable HTTP
// transport's (stdio and legacy SSE sessions are not signed and live with their stream).
func (m *mcpSessions) save(ctx context.Context, rec sessionRecord) {
	t, err := m.signer.verify(sessionID(ctx))
	if err != nil {
		return
	}
	if err := m.table.save(ctx, t.name, rec, m.remaining(t)); err != nil {
		m.log.Warn("saving an mcp session record: the session survives a restart with its token's facts only", "err", err)
	}
}
