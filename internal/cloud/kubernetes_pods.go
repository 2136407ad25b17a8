package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/executor-exporter/executor_exporter/internal/httpget"
)

// maxPodListBytes bounds the pods-on-this-node list. A pod object runs to
// 5–20 KiB (managed fields, env, volumes), and a node holds at most a few
// hundred pods; the list is decoded one pod at a time, so the bound is on
// the transfer, not on memory.
const maxPodListBytes = 32 << 20

// mirrorAnnotation holds a static pod's config hash on its mirror pod: the
// kubelet names the static pod's cgroup after the hash, not after the
// mirror's UID.
const mirrorAnnotation = "kubernetes.io/config.mirror"

// Pod is what is kept of a pod on this node.
type Pod struct {
	UID       string
	Namespace string
	Name      string
	// Labels are the allowlisted labels (Kubernetes names), cleaned.
	Labels map[string]string
	// Containers maps a container's runtime ID, without scheme, to its
	// name and its ID as the status gives it ("containerd://<id>").
	Containers map[string]Container
	// configHash is a static pod's cgroup name (mirrorAnnotation).
	configHash string
}

// Container is one container of a Pod.
type Container struct {
	Name string
	ID   string
}

// podURL lists the pods bound to node. resourceVersion=0 lets the API
// server answer from its watch cache, as the kubelet's own list does,
// instead of a quorum read of etcd for every exporter on every node.
func podsURL(base, node string) string {
	q := url.Values{}
	q.Set("fieldSelector", "spec.nodeName="+node)
	q.Set("resourceVersion", "0")
	return strings.TrimRight(base, "/") + "/api/v1/pods" + "?" + q.Encode()
}

// pods lists the pods on the node, keeping the allowlisted labels.
func (k *kubeClient) pods(ctx context.Context, labelAllowlist []string) ([]Pod, error) {
	var pods []Pod
	_, err := k.http.Stream(ctx, httpget.Request{URL: k.podsURL, Header: k.header(), Limit: maxPodListBytes}, func(r io.Reader) error {
		var err error
		pods, err = parsePodList(r, labelAllowlist)
		return err
	})
	return pods, err
}

// podDoc is the part of a Pod object the exporter reads.
type podDoc struct {
	Metadata struct {
		UID         string            `json:"uid"`
		Namespace   string            `json:"namespace"`
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		ContainerStatuses          []containerStatusDoc `json:"containerStatuses"`
		InitContainerStatuses      []containerStatusDoc `json:"initContainerStatuses"`
		EphemeralContainerStatuses []containerStatusDoc `json:"ephemeralContainerStatuses"`
	} `json:"status"`
}

type containerStatusDoc struct {
	Name        string `json:"name"`
	ContainerID string `json:"containerID"`
	// The previous instance of a restarted container: an OOM-killed JVM's
	// last sample names that one's cgroup.
	LastState struct {
		Terminated *struct {
			ContainerID string `json:"containerID"`
		} `json:"terminated"`
	} `json:"lastState"`
}

// parsePodList decodes a PodList one item at a time, so a node's whole
// list is never held decoded at once.
func parsePodList(r io.Reader, labelAllowlist []string) ([]Pod, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	var pods []Pod
	sawItems := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("pod list: %w", err)
		}
		switch key, _ := tok.(string); key {
		case "kind":
			var kind string
			if err := dec.Decode(&kind); err != nil {
				return nil, fmt.Errorf("pod list: kind: %w", err)
			}
			if kind != "PodList" {
				return nil, fmt.Errorf("pod list: got a %q", kind)
			}
		case "items":
			sawItems = true
			if pods, err = decodePodItems(dec, labelAllowlist); err != nil {
				return nil, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("pod list: %q: %w", key, err)
			}
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	if !sawItems {
		return nil, errors.New("pod list: no items")
	}
	return pods, nil
}

func decodePodItems(dec *json.Decoder, labelAllowlist []string) ([]Pod, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("pod list: items: %w", err)
	}
	if tok == nil {
		return nil, nil // "items": null, an empty list from some servers
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("pod list: items is %v, not a list", tok)
	}
	var pods []Pod
	for dec.More() {
		var doc podDoc
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("pod list: item %d: %w", len(pods), err)
		}
		pods = append(pods, podFromDoc(&doc, labelAllowlist))
	}
	return pods, expectDelim(dec, ']')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("pod list: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("pod list: got %v, want %v", tok, want)
	}
	return nil
}

func podFromDoc(doc *podDoc, labelAllowlist []string) Pod {
	m := &doc.Metadata
	p := Pod{UID: m.UID, Namespace: CleanValue(m.Namespace), Name: CleanValue(m.Name),
		Containers: map[string]Container{}, configHash: m.Annotations[mirrorAnnotation]}
	if len(labelAllowlist) > 0 {
		p.Labels = allowedNodeLabels(m.Labels, labelAllowlist)
	}
	for _, list := range [][]containerStatusDoc{doc.Status.ContainerStatuses, doc.Status.InitContainerStatuses, doc.Status.EphemeralContainerStatuses} {
		for _, c := range list {
			ids := []string{c.ContainerID}
			if t := c.LastState.Terminated; t != nil {
				ids = append(ids, t.ContainerID)
			}
			for _, id := range ids {
				// "containerd://<id>": the cgroup path has only <id>.
				_, bare, ok := strings.Cut(id, "://")
				if ok && bare != "" {
					p.Containers[bare] = Container{Name: CleanValue(c.Name), ID: CleanValue(id)}
				}
			}
		}
	}
	return p
}

// PodIndex finds the pods of this node by the UID their cgroup path shows.
type PodIndex struct {
	byUID map[string]*Pod
}

// NewPodIndex indexes pods by UID, and static pods also by config hash.
func NewPodIndex(pods []Pod) *PodIndex {
	idx := &PodIndex{byUID: make(map[string]*Pod, len(pods))}
	for i := range pods {
		idx.byUID[pods[i].UID] = &pods[i]
	}
	for i := range pods {
		// A hash that is also some pod's UID is that pod's.
		if h := pods[i].configHash; h != "" && idx.byUID[h] == nil {
			idx.byUID[h] = &pods[i]
		}
	}
	return idx
}

// Pod returns the pod whose cgroup is named after uid.
func (x *PodIndex) Pod(uid string) (*Pod, bool) {
	if x == nil || uid == "" {
		return nil, false
	}
	p, ok := x.byUID[uid]
	return p, ok
}

// Len is the number of pods indexed (static pods once).
func (x *PodIndex) Len() int {
	if x == nil {
		return 0
	}
	n := 0
	for k, p := range x.byUID {
		if k == p.UID {
			n++
		}
	}
	return n
}
