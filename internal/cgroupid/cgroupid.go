// Package cgroupid tells from a cgroup path which workload a process
// belongs to: the Kubernetes pod (its UID) and container (its runtime ID),
// or the YARN container. The kubelet and the NodeManager name the cgroups
// they create after these ids, so the path a process's /proc/<pid>/cgroup
// shows identifies it without asking anybody.
//
// Layouts understood, on cgroup v1 (the memory controller's path) and v2
// (the unified path) alike, under any cgroup root and any prefix (kind's
// /kubelet.slice, a node in a Docker container's /docker/<id>):
//
//	cgroupfs driver  …/kubepods[/burstable|/besteffort]/pod<uid>/<container>
//	systemd driver   …/kubepods[-burstable|-besteffort].slice/kubepods-…-pod<uid_with_underscores>.slice/<container>
//	containerd's v1 systemd form   …/kubepods-…-pod<uid>.slice:cri-containerd:<id>
//	YARN             …/container_[e<epoch>_]<cluster ts>_<app>_<attempt>_<n>
//
// where <container> is the bare 64-hex id (cgroupfs: containerd, Docker),
// crio-<id>, or a systemd scope cri-containerd-<id>.scope, crio-<id>.scope,
// docker-<id>.scope; anything below it (crun's "container" sub-cgroup) is
// ignored. A static pod's UID is its config hash, 32 hex digits.
package cgroupid

import "strings"

// Runtimes, as the scheme of a container ID in a Pod's status
// ("containerd://<id>") and in kube-state-metrics' container_id label.
const (
	RuntimeContainerd = "containerd"
	RuntimeCRIO       = "cri-o"
	RuntimeDocker     = "docker"
)

// QoS classes, as the kubelet names its cgroups.
const (
	QoSGuaranteed = "guaranteed"
	QoSBurstable  = "burstable"
	QoSBestEffort = "besteffort"
)

// ID is what a cgroup path says about its workload. Empty fields are
// unknown.
type ID struct {
	// PodUID is the pod's metadata.uid, with dashes; for a static pod,
	// its config hash.
	PodUID string
	// QoS is the pod's QoS class, one of the QoS constants.
	QoS string
	// ContainerID is the runtime's id of the container, without scheme.
	ContainerID string
	// Runtime is set when the path names it (systemd scopes, CRI-O).
	Runtime string
	// YARNContainer is a YARN container id, container_….
	YARNContainer string
}

// scopePrefixes map the prefix of a container's cgroup (systemd scope or
// CRI-O's cgroupfs directory) to its runtime.
var scopePrefixes = []struct{ prefix, runtime string }{
	{"cri-containerd-", RuntimeContainerd},
	{"crio-", RuntimeCRIO},
	{"docker-", RuntimeDocker},
}

// Parse reads the workload's identity from a cgroup path. It never fails:
// a path it does not recognise gives an empty ID.
func Parse(path string) ID {
	segs := strings.Split(path, "/")
	// The innermost pod segment wins: a kubelet in a container that
	// itself runs in a pod (kind in a CI pod) nests one under the other.
	for i := len(segs) - 1; i >= 0; i-- {
		if id, ok := podSegment(segs[:i], segs[i]); ok {
			if id.ContainerID == "" && i+1 < len(segs) {
				id.ContainerID, id.Runtime = containerSegment(segs[i+1])
			}
			return id
		}
	}
	for i := len(segs) - 1; i >= 0; i-- {
		if IsYARNContainer(segs[i]) {
			return ID{YARNContainer: segs[i]}
		}
	}
	return ID{}
}

// podSegment recognises one path segment as a pod's cgroup, given the
// segments above it.
func podSegment(parents []string, seg string) (ID, bool) {
	// cgroupfs: pod<uid> right below kubepods or kubepods/<qos>.
	if uid, ok := strings.CutPrefix(seg, "pod"); ok && isPodUID(uid) {
		n := len(parents)
		switch {
		case n >= 1 && parents[n-1] == "kubepods":
			return ID{PodUID: uid, QoS: QoSGuaranteed}, true
		case n >= 2 && parents[n-2] == "kubepods" && (parents[n-1] == QoSBurstable || parents[n-1] == QoSBestEffort):
			return ID{PodUID: uid, QoS: parents[n-1]}, true
		}
		return ID{}, false
	}
	// systemd: <parent slice>-pod<uid>.slice, where the parent slice's
	// name ends in kubepods, kubepods-burstable or kubepods-besteffort and
	// systemd's "-" separator has turned the UID's dashes into "_".
	// containerd's v1 systemd form appends :cri-containerd:<id>.
	slice, scoped, _ := strings.Cut(seg, ":")
	name, ok := strings.CutSuffix(slice, ".slice")
	if !ok {
		return ID{}, false
	}
	i := strings.LastIndex(name, "-pod")
	if i < 0 {
		return ID{}, false
	}
	uid := strings.ReplaceAll(name[i+len("-pod"):], "_", "-")
	if !isPodUID(uid) {
		return ID{}, false
	}
	id := ID{PodUID: uid}
	switch parent := name[:i]; {
	case parent == "kubepods" || strings.HasSuffix(parent, "-kubepods"):
		id.QoS = QoSGuaranteed
	case parent == "kubepods-burstable" || strings.HasSuffix(parent, "-kubepods-burstable"):
		id.QoS = QoSBurstable
	case parent == "kubepods-besteffort" || strings.HasSuffix(parent, "-kubepods-besteffort"):
		id.QoS = QoSBestEffort
	default:
		return ID{}, false
	}
	if scoped != "" {
		// kubepods-…-pod<uid>.slice:cri-containerd:<id>
		prefix, cid, _ := strings.Cut(scoped, ":")
		if isContainerID(cid) {
			id.ContainerID, id.Runtime = cid, runtimeOfPrefix(prefix+"-")
		}
	}
	return id, true
}

// containerSegment reads a container's id (and runtime, when named) from
// the segment below a pod's.
func containerSegment(seg string) (id, runtime string) {
	if isContainerID(seg) {
		return seg, "" // cgroupfs with containerd or Docker
	}
	name := strings.TrimSuffix(seg, ".scope")
	if strings.HasPrefix(name, "crio-conmon-") {
		// CRI-O's monitor process, not a container.
		return "", ""
	}
	for _, p := range scopePrefixes {
		if cid, ok := strings.CutPrefix(name, p.prefix); ok && isContainerID(cid) {
			return cid, p.runtime
		}
	}
	return "", ""
}

func runtimeOfPrefix(prefix string) string {
	for _, p := range scopePrefixes {
		if p.prefix == prefix {
			return p.runtime
		}
	}
	return ""
}

// isPodUID accepts a UUID in its canonical lower-case form (what the API
// server generates) or 32 hex digits (a static pod's config hash).
func isPodUID(s string) bool {
	switch len(s) {
	case 32:
		return isHex(s)
	case 36:
		for i := 0; i < len(s); i++ {
			if i == 8 || i == 13 || i == 18 || i == 23 {
				if s[i] != '-' {
					return false
				}
			} else if !isHexDigit(s[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// isContainerID accepts the 64 lower-case hex digits every CRI runtime and
// Docker use.
func isContainerID(s string) bool { return len(s) == 64 && isHex(s) }

// IsYARNContainer accepts container_[e<epoch>_]<cluster ts>_<app>_<attempt>_<n>,
// every part decimal.
func IsYARNContainer(s string) bool {
	rest, ok := strings.CutPrefix(s, "container_")
	if !ok {
		return false
	}
	parts := strings.Split(rest, "_")
	if len(parts) == 5 && len(parts[0]) > 1 && parts[0][0] == 'e' {
		parts[0] = parts[0][1:]
	} else if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if !IsDecimal(p) {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHexDigit(s[i]) {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// IsDecimal reports whether s is a decimal number of 1 to 20 digits (a
// uint64 has at most 20), as the ids in cgroup paths and YARN's are.
func IsDecimal(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// QualifiedContainerID is the container ID as a Pod's status and
// kube-state-metrics write it, "<runtime>://<id>", when the path names the
// runtime; the bare id otherwise.
func (id ID) QualifiedContainerID() string {
	if id.ContainerID == "" || id.Runtime == "" {
		return id.ContainerID
	}
	return id.Runtime + "://" + id.ContainerID
}
