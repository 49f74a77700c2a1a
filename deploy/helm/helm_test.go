// Package helm_test checks the Helm chart in gatehouse/: it renders the chart with the real
// helm (make helm builds it into .tmp/bin), asserts the structure of the manifests, and loads
// the configuration the ConfigMap holds exactly as `gatehouse validate` does, with the
// environment the Deployment gives the container.
package helm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

const (
	// chartDir is the chart, relative to this package.
	chartDir = "gatehouse"
	// releaseName is the release every render uses; the objects are called releaseName
	// because it contains the chart's name.
	releaseName = "gatehouse"
	// kubeVersion is the Kubernetes version rendered for: the chart's minimum (Chart.yaml
	// kubeVersion), since a helm built with go install assumes v1.20 without a cluster.
	kubeVersion = "1.30.0"
	// helmTimeout bounds one helm command.
	helmTimeout = 2 * time.Minute
)

// helmBin returns the helm binary: $HELM_BIN, .tmp/bin/helm of the repository (make helm),
// or helm on PATH. Without one the test fails under CI (CI set) and is skipped elsewhere.
func helmBin(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("HELM_BIN"); bin != "" {
		return bin
	}
	cached, err := filepath.Abs(filepath.Join("..", "..", ".tmp", "bin", "helm"))
	if err == nil {
		if _, err := os.Stat(cached); err == nil {
			return cached
		}
	}
	if bin, err := exec.LookPath("helm"); err == nil {
		return bin
	}
	const msg = "helm not found: run `make helm` (it builds .tmp/bin/helm) or set HELM_BIN"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// runHelm runs helm with args and returns its standard output; a failure's error carries
// helm's standard error.
func runHelm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	stdout, _, err := runHelmOutputs(t, args...)
	return stdout, err
}

// runHelmOutputs runs helm with args and returns its standard output and standard error.
func runHelmOutputs(t *testing.T, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), helmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, helmBin(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// No repositories, plugins or caches of the user's: helm reads only the chart.
	home := t.TempDir()
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil, fmt.Errorf("helm %v: no answer within %s", args, helmTimeout)
		}
		return nil, nil, fmt.Errorf("helm %v: %w\n%s", args, err, errOut.Bytes())
	}
	return out.Bytes(), errOut.Bytes(), nil
}

// valuesArgs turns values files of testdata/ into -f arguments.
func valuesArgs(files []string) []string {
	var args []string
	for _, f := range files {
		args = append(args, "-f", filepath.Join("testdata", f))
	}
	return args
}

// helmTemplate renders the chart with the values files of testdata/.
func helmTemplate(t *testing.T, files ...string) ([]byte, error) {
	t.Helper()
	args := append([]string{"template", releaseName, chartDir, "--namespace", "gateways", "--kube-version", kubeVersion}, valuesArgs(files)...)
	return runHelm(t, args...)
}
