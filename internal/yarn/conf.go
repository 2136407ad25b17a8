// Package yarn reads what Hadoop YARN knows of this machine's Spark
// executors: the NodeManager's configuration (yarn-site.xml), its REST API
// (/ws/v1/node/...: each container's allocation, state, exit status and
// diagnostics, the node's check modes), the ResourceManager's application
// names (/ws/v1/cluster/apps/{id}), and the NodeManager's reasons for a
// kill, parsed from the diagnostics text into a typed result.
//
// The parsers are pure functions over bytes; Source polls in the
// background and hands out what it holds, never waiting on the network for
// a caller. docs/yarn.md describes what the exporter makes of it.
package yarn

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// MaxConfBytes bounds a yarn-site.xml: real ones are tens of KiB.
const MaxConfBytes = 4 << 20

// Configuration keys and their defaults (YarnConfiguration, yarn-default.xml).
const (
	keyNMHostname      = "yarn.nodemanager.hostname"
	keyNMWebapp        = "yarn.nodemanager.webapp.address"
	keyNMWebappHTTPS   = "yarn.nodemanager.webapp.https.address"
	keyRMHostname      = "yarn.resourcemanager.hostname"
	keyRMWebapp        = "yarn.resourcemanager.webapp.address"
	keyRMWebappHTTPS   = "yarn.resourcemanager.webapp.https.address"
	keyRMHAEnabled     = "yarn.resourcemanager.ha.enabled"
	keyRMHAIDs         = "yarn.resourcemanager.ha.rm-ids"
	keyHTTPPolicy      = "yarn.http.policy"
	keyVmemRatio       = "yarn.nodemanager.vmem-pmem-ratio"
	keyPmemCheck       = "yarn.nodemanager.pmem-check-enabled"
	keyVmemCheck       = "yarn.nodemanager.vmem-check-enabled"
	keyMonitorInterval = "yarn.nodemanager.container-monitor.interval-ms"
	keyResourceMonitor = "yarn.nodemanager.resource-monitor.interval-ms"
	keyMonitorEnabled  = "yarn.nodemanager.container-monitor.enabled"
	keySmapsRSS        = "yarn.nodemanager.container-monitor.procfs-tree.smaps-based-rss.enabled"
	keyMemoryEnabled   = "yarn.nodemanager.resource.memory.enabled"
	keyMemoryEnforced  = "yarn.nodemanager.resource.memory.enforced"
	keyElastic         = "yarn.nodemanager.elastic-memory-control.enabled"
	keyAuthType        = "hadoop.http.authentication.type"

	DefaultNMPort        = 8042
	DefaultNMHTTPSPort   = 8044
	DefaultRMPort        = 8088
	DefaultRMHTTPSPort   = 8090
	DefaultVmemRatio     = 2.1
	DefaultMonitorMillis = 3000
	policyHTTPSOnly      = "HTTPS_ONLY"
	authSimple           = "simple"
	maxExpansionDepth    = 8
	maxConfProperties    = 10000
	maxConfValueBytes    = 64 << 10
	wildcardHost         = "0.0.0.0"
)

// ErrKerberos: the web services ask for SPNEGO (Kerberos), which the
// exporter does not speak; it says so once instead of counting 401s.
var ErrKerberos = errors.New("hadoop.http.authentication.type is kerberos: the NodeManager and ResourceManager web services need SPNEGO, which the exporter does not support; set --yarn.nodemanager.url to an unauthenticated endpoint or disable the yarn collector")

// Conf is what the exporter takes from yarn-site.xml (and core-site.xml,
// for hadoop.http.authentication.type), with YARN's defaults where a key
// is absent.
type Conf struct {
	Props map[string]string // every property, as written (values not expanded)

	HTTPS bool // yarn.http.policy HTTPS_ONLY
	// NodeManager and ResourceManagers are host:port web addresses, the
	// latter one per RM id under HA, in the configured order. A host of
	// 0.0.0.0 is left as is: NodeManagerURL replaces it.
	NodeManager      string
	ResourceManagers []string

	VmemRatio float64
	PmemCheck bool // yarn.nodemanager.pmem-check-enabled
	VmemCheck bool // yarn.nodemanager.vmem-check-enabled
	// MonitorMillis is the container monitor's interval: container-monitor.interval-ms,
	// else resource-monitor.interval-ms, else 3000. MonitorEnabled is
	// container-monitor.enabled with an interval above 0: off, the
	// NodeManager starts without its monitor and no polling check runs.
	MonitorMillis  int64
	MonitorEnabled bool
	SmapsRSS       bool
	// The cgroup settings as written: resource.memory.enabled (memory
	// cgroups), resource.memory.enforced (a hard limit; true by default,
	// read by the monitor whether or not memory cgroups are on) and
	// elastic-memory-control.enabled. Enforce makes them a rule.
	CgroupsMemory  bool
	MemoryEnforced bool
	ElasticControl bool
	AuthType       string
}

// Kerberos reports whether the web services need SPNEGO.
func (c Conf) Kerberos() bool { return strings.EqualFold(c.AuthType, "kerberos") }

type xmlConf struct {
	Properties []struct {
		Name  string `xml:"name"`
		Value string `xml:"value"`
	} `xml:"property"`
}

// ParseSiteXML parses a Hadoop *-site.xml. Later properties of the same
// name win, as in Hadoop's Configuration. Bad input is an error: a
// truncated file, more than MaxConfBytes, a value that is not the type
// YARN reads (a ratio that is no number).
func ParseSiteXML(data []byte) (Conf, error) {
	if len(data) > MaxConfBytes {
		return Conf{}, fmt.Errorf("configuration larger than %d bytes", MaxConfBytes)
	}
	var x xmlConf
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	if err := dec.Decode(&x); err != nil {
		return Conf{}, fmt.Errorf("yarn-site.xml: %w", err)
	}
	if len(x.Properties) > maxConfProperties {
		return Conf{}, fmt.Errorf("yarn-site.xml: %d properties, more than %d", len(x.Properties), maxConfProperties)
	}
	props := make(map[string]string, len(x.Properties))
	for _, p := range x.Properties {
		name := strings.TrimSpace(p.Name)
		if name == "" || len(p.Value) > maxConfValueBytes {
			continue
		}
		props[name] = strings.TrimSpace(p.Value)
	}
	return FromProps(props)
}

// Merge adds the properties of another file (core-site.xml) that this one
// does not set, and returns the Conf they make.
func (c Conf) Merge(other Conf) (Conf, error) {
	props := make(map[string]string, len(c.Props)+len(other.Props))
	for k, v := range other.Props {
		props[k] = v
	}
	for k, v := range c.Props {
		props[k] = v
	}
	return FromProps(props)
}

// FromProps applies YARN's defaults to a set of properties.
func FromProps(props map[string]string) (Conf, error) {
	get := func(key string) string { return expand(props, props[key], 0) }
	c := Conf{Props: props, AuthType: authSimple}
	var err error
	c.HTTPS = strings.EqualFold(get(keyHTTPPolicy), policyHTTPSOnly)
	if v := get(keyAuthType); v != "" {
		c.AuthType = v
	}
	if c.VmemRatio, err = floatProp(get, keyVmemRatio, DefaultVmemRatio); err != nil {
		return Conf{}, err
	}
	if c.VmemRatio < 1 {
		return Conf{}, fmt.Errorf("%s=%v: YARN requires at least 1", keyVmemRatio, c.VmemRatio)
	}
	// ContainersMonitorImpl: the container monitor's interval, else the
	// resource monitor's, else 3000 ms; 0 or less turns the monitor off.
	resourceMillis, err := intProp(get, keyResourceMonitor, DefaultMonitorMillis)
	if err != nil {
		return Conf{}, err
	}
	if c.MonitorMillis, err = intProp(get, keyMonitorInterval, resourceMillis); err != nil {
		return Conf{}, err
	}
	monitorOn := false
	bools := []struct {
		dst *bool
		key string
		def bool
	}{{&c.PmemCheck, keyPmemCheck, true}, {&c.VmemCheck, keyVmemCheck, true}, {&c.SmapsRSS, keySmapsRSS, false},
		{&c.CgroupsMemory, keyMemoryEnabled, false}, {&c.MemoryEnforced, keyMemoryEnforced, true}, {&c.ElasticControl, keyElastic, false},
		{&monitorOn, keyMonitorEnabled, true}}
	for _, b := range bools {
		if *b.dst, err = boolProp(get, b.key, b.def); err != nil {
			return Conf{}, err
		}
	}
	c.MonitorEnabled = monitorOn && c.MonitorMillis > 0

	nmKey, nmPort, rmKey, rmPort := keyNMWebapp, DefaultNMPort, keyRMWebapp, DefaultRMPort
	if c.HTTPS {
		nmKey, nmPort, rmKey, rmPort = keyNMWebappHTTPS, DefaultNMHTTPSPort, keyRMWebappHTTPS, DefaultRMHTTPSPort
	}
	// yarn-default.xml: ${yarn.nodemanager.hostname}:8042, the hostname
	// 0.0.0.0 by default; a NodeManager given a hostname listens on it
	// alone, and loopback does not reach it.
	nmHost := get(keyNMHostname)
	if nmHost == "" {
		nmHost = wildcardHost
	}
	c.NodeManager = withPort(get(nmKey), nmHost, nmPort)
	rmHost := get(keyRMHostname)
	if rmHost == "" {
		rmHost = wildcardHost
	}
	ids := splitList(get(keyRMHAIDs))
	haOn, err := boolProp(get, keyRMHAEnabled, false)
	if err != nil {
		return Conf{}, err
	}
	if haOn && len(ids) > 0 {
		for _, id := range ids {
			host := get(keyRMHostname + "." + id)
			if host == "" {
				host = rmHost
			}
			c.ResourceManagers = append(c.ResourceManagers, withPort(get(rmKey+"."+id), host, rmPort))
		}
	} else {
		c.ResourceManagers = []string{withPort(get(rmKey), rmHost, rmPort)}
	}
	return c, nil
}

// expand replaces ${name} with the property's value, as Hadoop's
// Configuration does (yarn.resourcemanager.webapp.address is
// ${yarn.resourcemanager.hostname}:8088 by default and on Dataproc); a
// name that is not set stays as written.
func expand(props map[string]string, v string, depth int) string {
	if depth >= maxExpansionDepth || !strings.Contains(v, "${") {
		return v
	}
	var b strings.Builder
	for {
		i := strings.Index(v, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(v[i:], '}')
		if j < 0 {
			break
		}
		name := v[i+2 : i+j]
		b.WriteString(v[:i])
		if val, ok := props[name]; ok {
			b.WriteString(expand(props, val, depth+1))
		} else {
			b.WriteString(v[i : i+j+1])
		}
		v = v[i+j+1:]
	}
	b.WriteString(v)
	return b.String()
}

// withPort returns addr as host:port: the default host and port where
// addr lacks them.
func withPort(addr, defHost string, defPort int) string {
	if addr == "" {
		return net.JoinHostPort(defHost, strconv.Itoa(defPort))
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return net.JoinHostPort(addr, strconv.Itoa(defPort))
	}
	if host == "" {
		host = defHost
	}
	return net.JoinHostPort(host, port)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func boolProp(get func(string) string, key string, def bool) (bool, error) {
	v := get(key)
	if v == "" {
		return def, nil
	}
	// Hadoop's getBoolean: "true" or "false", any case; anything else is
	// the default.
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return def, nil
}

func floatProp(get func(string) string, key string, def float64) (float64, error) {
	v := get(key)
	if v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f != f || f > 1e6 {
		return 0, fmt.Errorf("%s=%q: not a number YARN would read", key, v)
	}
	return f, nil
}

func intProp(get func(string) string, key string, def int64) (int64, error) {
	v := get(key)
	if v == "" {
		return def, nil
	}
	// Hadoop's getLong: a number that is not one is an error at the
	// NodeManager's start too. Zero and below are values (off).
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not an integer", key, v)
	}
	return n, nil
}

// NodeManagerURL is the NodeManager's web services base URL for this
// machine: a wildcard or empty host (the NodeManager listens on every
// address) becomes localHost.
func (c Conf) NodeManagerURL(localHost string) string {
	return baseURL(c.HTTPS, c.NodeManager, localHost)
}

// ResourceManagerURLs are the ResourceManagers' base URLs, one per HA id.
func (c Conf) ResourceManagerURLs(localHost string) []string {
	out := make([]string, 0, len(c.ResourceManagers))
	for _, a := range c.ResourceManagers {
		out = append(out, baseURL(c.HTTPS, a, localHost))
	}
	return out
}

func baseURL(https bool, addr, localHost string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, ""
	}
	// A ${…} left unexpanded is a name set elsewhere (the NodeManager's
	// own hostname): on this machine, the local address reaches it.
	if host == "" || host == wildcardHost || host == "::" || strings.Contains(host, "${") {
		host = localHost
	}
	scheme := "http"
	if https {
		scheme = "https"
	}
	if port == "" {
		return scheme + "://" + host
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
