package soak

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Replicas is how many gateway replicas the run starts.
const Replicas = 3

// replica is one `gatehouse serve` process and its fixed addresses.
type replica struct {
	*proc
	boundary, admin, internal string
}

func (r *replica) base() string { return "http://" + r.boundary }

// listens reports whether port is one of the replica's listeners'.
func (r *replica) listens(port int) bool {
	for _, a := range []string{r.boundary, r.admin, r.internal} {
		if _, p, err := net.SplitHostPort(a); err == nil && p == strconv.Itoa(port) {
			return true
		}
	}
	return false
}

// Platform is every process of the run.
type Platform struct {
	dir, bin, redisBin string

	redis    *proc
	redisDir string
	Redis    string // host:port
	backend  *proc
	Backend  string
	agent    *proc
	replicas []*replica

	// Token is the bearer of the traffic; Victim the one revoked during the run, used by a
	// share of the calls; Admin the operator's (admin.keys, admin.revocations).
	Token, Victim, VictimJTI, Admin string
	// A2A are the A2A callers' bearers: a2a.max_tasks_per_principal (100 within
	// a2a.task_ttl) bounds what one principal may start, so the A2A traffic comes from many.
	A2A []string
}

// a2aPrincipals is how many A2A callers the traffic has.
const a2aPrincipals = 32

// config is the replicas' configuration: every piece of shared state on Redis, JWT auth with
// a generated key ring and revocations, the demo methods, the gRPC backend process, the MCP
// child, the agent link, A2A, NEKTE and a session route.
const config = `server:
  boundary: {addr: 127.0.0.1:0}
  admin: {addr: 127.0.0.1:0}
  internal: {addr: 127.0.0.1:0}
  shutdown_grace: 5s
  watch_config: false
state:
  backend: redis
  redis: {addrs: ["%[1]s"], key_prefix: "soak:", pool_size: 16}
websocket: {max_in_flight: 256}
mcp_face: {session_key: "%[2]s"}
nekte:
  catalog: {agent: gatehouse, categories: {builtin: demo, mcp: tools}}
  tasks: {record_ttl: 30s, max_per_owner: 1024}
a2a: {default_skill: subtract, task_ttl: 15s}
deadline: {default: 30s, max: 5m}
breakers: {default: {}}
retries: {budget: {ratio: 0.1}}
admission: {global: {}, default: {}}
auth:
  anonymous: {loopback_only: true, tier: standard}
  jwt:
    issuers:
      - {issuer: gatehouse-dev, audiences: [gatehouse], jwks_file: "%[3]s", algorithms: [RS256]}
  keyring: {issuer: gatehouse}
  revocation: {refresh: 10s, admin_scope: admin.revocations}
agents:
  heartbeat_interval: 5s
  missed_heartbeats: 3
  auth: {allow_loopback_anonymous: true}
session:
  routes:
    - name: calc
      capability: {method: subtract}
routing:
  demo: {}
  grpc:
    - name: calculator
      address: %[4]s
      descriptors: {reflection: true}
      services:
        - {service: calculator.v1.CalculatorService, prefix: "calc.", naming: snake}
      unwrap: {calc.subtract: result, calc.sum: result, calc.get_data: result}
  mcp:
    direct_zones: [external, internal, operator, local]
    servers:
      - name: demo
        stdio: {command: "%[5]s", args: [demo-mcp]}
log:
  level: info
  format: json
`

// Start brings the platform up in dir: Redis, the gRPC backend, the replicas, the agent.
// repo is the repository's root (for the development JWT keys), bin the gatehouse binary.
func Start(ctx context.Context, dir, repo, bin string) (*Platform, error) {
	redisBin := os.Getenv("REDIS_SERVER_BIN")
	if redisBin == "" {
		var err error
		if redisBin, err = exec.LookPath("redis-server"); err != nil {
			return nil, errors.New("no redis-server on PATH and REDIS_SERVER_BIN unset: run make redis-tools")
		}
	}
	p := &Platform{dir: dir, bin: bin, redisBin: redisBin, redisDir: filepath.Join(dir, "redis")}
	var err error
	if err = os.MkdirAll(p.redisDir, 0o700); err != nil {
		return nil, err
	}
	// A previous run's dump would be loaded: the run starts from an empty Redis.
	if err = os.Remove(filepath.Join(p.redisDir, "dump.rdb")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if p.Redis, err = freeAddr(); err != nil {
		return nil, err
	}
	port := p.Redis[strings.LastIndexByte(p.Redis, ':')+1:]
	// The dump is written on SHUTDOWN SAVE only: a restart of Redis keeps the shared state.
	p.redis = newProc(dir, "redis", nil, redisBin, "--bind", "127.0.0.1", "--port", port,
		"--dir", p.redisDir, "--save", "", "--appendonly", "no")
	if err = p.redis.start(); err != nil {
		return nil, err
	}
	if err = waitTCP(p.Redis, 20*time.Second); err != nil {
		return p, err
	}
	if p.Backend, err = freeAddr(); err != nil {
		return p, err
	}
	p.backend = newProc(dir, "grpc-backend", nil, bin, "demo-grpc", "--addr", p.Backend)
	if err = p.backend.start(); err != nil {
		return p, err
	}
	if err = waitTCP(p.Backend, 20*time.Second); err != nil {
		return p, err
	}

	jwks, err := filepath.Abs(filepath.Join(repo, "configs/examples/dev-jwks.json"))
	if err != nil {
		return p, err
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	cfg := filepath.Join(dir, "gatehouse.yaml")
	body := fmt.Sprintf(config, p.Redis, hex.EncodeToString(key), jwks, p.Backend, bin)
	if err = os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return p, err
	}
	signing := filepath.Join(repo, "configs/examples/dev-signing-key.pem")
	if p.Token, _, err = token(bin, signing, "soak-user", ""); err != nil {
		return p, err
	}
	if p.Victim, p.VictimJTI, err = token(bin, signing, "soak-victim", ""); err != nil {
		return p, err
	}
	if p.Admin, _, err = token(bin, signing, "soak-admin", "admin.keys admin.revocations"); err != nil {
		return p, err
	}
	for i := range a2aPrincipals {
		tok, _, err := token(bin, signing, fmt.Sprintf("soak-a2a-%d", i), "")
		if err != nil {
			return p, err
		}
		p.A2A = append(p.A2A, tok)
	}

	for i := range Replicas {
		r := &replica{}
		for _, a := range []*string{&r.boundary, &r.admin, &r.internal} {
			if *a, err = freeAddr(); err != nil {
				return p, err
			}
		}
		r.proc = newProc(dir, fmt.Sprintf("replica-%d", i), []string{"GATEHOUSE_BIN=" + bin}, bin, "serve",
			"--config", cfg, "--boundary-addr", r.boundary, "--admin-addr", r.admin, "--internal-addr", r.internal)
		p.replicas = append(p.replicas, r)
		if err = r.start(); err != nil {
			return p, err
		}
	}
	for _, r := range p.replicas {
		if err = p.waitReady(ctx, r, 90*time.Second); err != nil {
			return p, err
		}
	}
	p.agent = newProc(dir, "agent", nil, bin, "demo-agent", "--connect", p.replicas[0].internal,
		"--id", "soak-agent", "--concurrency", "64")
	if err = p.agent.start(); err != nil {
		return p, err
	}
	return p, nil
}

// waitReady waits for a replica's /readyz to answer 200.
func (p *Platform) waitReady(ctx context.Context, r *replica, within time.Duration) error {
	deadline := time.Now().Add(within)
	c := &http.Client{Timeout: 3 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.admin+"/readyz", nil)
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if r.pid() == 0 {
			return fmt.Errorf("%s exited before it was ready:\n%s", r.name, r.tail(2000))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not ready within %v (last: %w):\n%s", r.name, within, err, r.tail(2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop kills every process.
func (p *Platform) Stop() {
	if p.agent != nil {
		p.agent.kill()
	}
	for _, r := range p.replicas {
		r.kill()
	}
	if p.backend != nil {
		p.backend.kill()
	}
	if p.redis != nil {
		p.redis.kill()
	}
}

// token signs a development JWT with `gatehouse token` and returns it with its jti.
func token(bin, key, sub, scope string) (string, string, error) {
	args := []string{"token", "--key", key, "--sub", sub, "--ttl", "6h"}
	if scope != "" {
		args = append(args, "--scope", scope)
	}
	out, err := exec.Command(bin, args...).Output() //nolint:gosec // the run's own binary
	if err != nil {
		return "", "", fmt.Errorf("gatehouse token: %w", err)
	}
	tok := strings.TrimSpace(string(out))
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", "", fmt.Errorf("gatehouse token printed %q", tok)
	}
	claims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", "", err
	}
	var c struct {
		JTI string `json:"jti"`
	}
	if err := json.Unmarshal(claims, &c); err != nil {
		return "", "", err
	}
	return tok, c.JTI, nil
}

// adminCall makes one JSON-RPC call on a replica's admin listener with the admin token,
// again for up to 30s while it fails with -32020 (the state store out of reach), as an
// operator would.
func (p *Platform) adminCall(r *replica, method, params string) (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := p.adminOnce(r, method, params)
		if err == nil || !strings.Contains(out, `"code":-32020`) || time.Now().After(deadline) {
			return out, err
		}
		time.Sleep(time.Second)
	}
}

func (p *Platform) adminOnce(r *replica, method, params string) (string, error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	req, err := http.NewRequest(http.MethodPost, "http://"+r.admin+"/rpc", bytes.NewBufferString(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.Admin)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if strings.Contains(b.String(), `"error"`) {
		return b.String(), fmt.Errorf("%s: %s", method, b.String())
	}
	return b.String(), nil
}
