package helm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/goccy/go-yaml"
)

// object is one rendered manifest: what every kind has, and its spec and data kept raw for
// the kind's own type.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec json.RawMessage   `json:"spec"`
	Data map[string]string `json:"data"`
}

// deploymentSpec is the part of a Deployment's spec the tests read.
type deploymentSpec struct {
	Replicas *int `json:"replicas"`
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	Template struct {
		Metadata struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec podSpec `json:"spec"`
	} `json:"template"`
}

type podSpec struct {
	ServiceAccountName            string `json:"serviceAccountName"`
	AutomountServiceAccountToken  *bool  `json:"automountServiceAccountToken"`
	TerminationGracePeriodSeconds int    `json:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot *bool `json:"runAsNonRoot"`
		RunAsUser    *int  `json:"runAsUser"`
	} `json:"securityContext"`
	Containers []container `json:"containers"`
	Volumes    []struct {
		Name      string `json:"name"`
		ConfigMap *struct {
			Name string `json:"name"`
		} `json:"configMap"`
		EmptyDir *struct{} `json:"emptyDir"`
	} `json:"volumes"`
}

type container struct {
	Name  string   `json:"name"`
	Image string   `json:"image"`
	Args  []string `json:"args"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
	Env     []envVar `json:"env"`
	EnvFrom []struct {
		SecretRef *struct {
			Name string `json:"name"`
		} `json:"secretRef"`
	} `json:"envFrom"`
	StartupProbe   *probe `json:"startupProbe"`
	LivenessProbe  *probe `json:"livenessProbe"`
	ReadinessProbe *probe `json:"readinessProbe"`
	Lifecycle      *struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `json:"seconds"`
			} `json:"sleep"`
		} `json:"preStop"`
	} `json:"lifecycle"`
	SecurityContext struct {
		RunAsNonRoot             *bool `json:"runAsNonRoot"`
		AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `json:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `json:"drop"`
		} `json:"capabilities"`
	} `json:"securityContext"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
		SubPath   string `json:"subPath"`
	} `json:"volumeMounts"`
}

type envVar struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	ValueFrom *struct {
		SecretKeyRef *struct {
			Name string `json:"name"`
			Key  string `json:"key"`
		} `json:"secretKeyRef"`
		FieldRef *struct {
			FieldPath string `json:"fieldPath"`
		} `json:"fieldRef"`
	} `json:"valueFrom"`
}

type probe struct {
	HTTPGet *struct {
		Path string `json:"path"`
		Port any    `json:"port"`
	} `json:"httpGet"`
	TimeoutSeconds int `json:"timeoutSeconds"`
}

type serviceSpec struct {
	Type     string            `json:"type"`
	Selector map[string]string `json:"selector"`
	Ports    []servicePort     `json:"ports"`
}

type servicePort struct {
	Name       string `json:"name"`
	Port       int    `json:"port"`
	TargetPort any    `json:"targetPort"`
}

type hpaSpec struct {
	ScaleTargetRef struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Name       string `json:"name"`
	} `json:"scaleTargetRef"`
	MinReplicas int `json:"minReplicas"`
	MaxReplicas int `json:"maxReplicas"`
	Metrics     []struct {
		Type     string `json:"type"`
		Resource struct {
			Name   string `json:"name"`
			Target struct {
				Type               string `json:"type"`
				AverageUtilization int    `json:"averageUtilization"`
			} `json:"target"`
		} `json:"resource"`
	} `json:"metrics"`
}

type pdbSpec struct {
	MinAvailable   any `json:"minAvailable"`
	MaxUnavailable any `json:"maxUnavailable"`
	Selector       struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
}

type serviceMonitorSpec struct {
	NamespaceSelector struct {
		MatchNames []string `json:"matchNames"`
	} `json:"namespaceSelector"`
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	Endpoints []struct {
		Port        string       `json:"port"`
		Path        string       `json:"path"`
		Relabelings []relabeling `json:"relabelings"`
	} `json:"endpoints"`
}

type relabeling struct {
	TargetLabel string `json:"targetLabel"`
	Replacement string `json:"replacement"`
}

// manifests is a rendered chart, by kind and name.
type manifests map[string]map[string]object

// parseManifests decodes helm template's output: YAML documents, empty ones skipped.
func parseManifests(out []byte) (manifests, error) {
	m := manifests{}
	dec := yaml.NewDecoder(bytes.NewReader(out), yaml.Strict())
	for i := 0; ; i++ {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if doc == nil {
			continue
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var o object
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if o.Kind == "" || o.Metadata.Name == "" {
			return nil, fmt.Errorf("document %d has no kind or name: %s", i, raw)
		}
		if m[o.Kind] == nil {
			m[o.Kind] = map[string]object{}
		}
		if _, dup := m[o.Kind][o.Metadata.Name]; dup {
			return nil, fmt.Errorf("two %s objects named %s", o.Kind, o.Metadata.Name)
		}
		m[o.Kind][o.Metadata.Name] = o
	}
}

// get returns the object of kind and name, failing the test when it was not rendered.
func (m manifests) get(t *testing.T, kind, name string) object {
	t.Helper()
	o, ok := m[kind][name]
	if !ok {
		t.Fatalf("no %s %s rendered; rendered: %v", kind, name, m.names())
	}
	return o
}

// spec decodes o's spec into v, failing the test on an error.
func (o object) spec(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(o.Spec, v); err != nil {
		t.Fatalf("%s %s spec: %v", o.Kind, o.Metadata.Name, err)
	}
}

func (m manifests) names() []string {
	var names []string
	for kind, objs := range m {
		for name := range objs {
			names = append(names, kind+"/"+name)
		}
	}
	return names
}
