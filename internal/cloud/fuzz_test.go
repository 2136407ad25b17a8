package cloud

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
)

var promLabelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// checkLabelValue fails unless s is what CleanValue promises: valid UTF-8,
// capped, no surrounding white space.
func checkLabelValue(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) || len(s) > MaxLabelValueBytes {
		t.Fatalf("%s %q: invalid UTF-8 or %d bytes", what, s, len(s))
	}
	if strings.TrimFunc(s, unicode.IsSpace) != s {
		t.Fatalf("%s %q: surrounding white space", what, s)
	}
}

func checkLifecycle(t *testing.T, what, lc string) {
	t.Helper()
	if lc != LifecycleOnDemand && lc != LifecycleSpot && lc != LifecycleUnknown {
		t.Fatalf("%s: lifecycle %q", what, lc)
	}
}

// checkInstance checks an Instance after clean(): every field a clean
// label value, the lifecycle one of the three.
func checkInstance(t *testing.T, inst Instance) {
	t.Helper()
	for _, f := range []string{inst.Provider, inst.Platform, inst.InstanceType, inst.Lifecycle,
		inst.Region, inst.Zone, inst.InstanceID, inst.Node, inst.NodePool, inst.Source} {
		checkLabelValue(t, "instance field", f)
	}
	checkLifecycle(t, "instance", inst.Lifecycle)
}

// FuzzParseAWSInstanceAction: any answer is a pending spot interruption;
// a time only comes from a JSON document whose "time" is RFC 3339.
func FuzzParseAWSInstanceAction(f *testing.F) {
	f.Add(`{"action": "terminate", "time": "2017-09-18T08:22:00Z"}`)
	f.Add(`{"action": "stop", "time": "2024-05-01T10:00:00+02:00"}`)
	f.Add(`{"action": "hibernate"}`)
	f.Add(`{"action": "terminate", "time": "2017-09-18 08:22:00"}`)
	f.Add(`<html>not found</html>`)
	f.Add(``)
	f.Add("{\"time\":\"\xd0\xd0\xec\xd0 0000\"}") // not UTF-8
	f.Add(`"\b"`)                                 // JSON, not an object
	f.Add(`0E000000000`)
	f.Fuzz(func(t *testing.T, body string) {
		n := parseAWSInstanceAction(body)
		if n.Event != EventSpotInterruption || !n.Pending {
			t.Fatalf("%q: notice %+v", body, n)
		}
		if n.Time.IsZero() {
			return
		}
		var doc struct {
			Time string `json:"time"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("%q: time %v from a body that is not JSON: %v", body, n.Time, err)
		}
		if want, err := time.Parse(time.RFC3339, doc.Time); err != nil || !want.Equal(n.Time) {
			t.Fatalf("%q: time %v, document says %q", body, n.Time, doc.Time)
		}
	})
}

// FuzzParseAzureInstance: a compute section or an error; what is accepted
// survives a JSON round trip and maps to a clean Instance whose zone is
// either IMDS's or <location>-<numeric zone>.
func FuzzParseAzureInstance(f *testing.F) {
	f.Add([]byte(cloudtest.AzureSpotInstance))
	// Real documented shape (api-version 2021-02-01), trimmed of network.
	f.Add([]byte(`{"compute":{"azEnvironment":"AzurePublicCloud","isHostCompatibilityLayerVm":"false",` +
		`"licenseType":"","location":"eastus","name":"examplevmname","offer":"0001-com-ubuntu-server-focal",` +
		`"osProfile":{"adminUsername":"azureuser","computerName":"examplevmname","disablePasswordAuthentication":"true"},` +
		`"osType":"Linux","placementGroupId":"","plan":{"name":"","product":"","publisher":""},"platformFaultDomain":"0",` +
		`"platformUpdateDomain":"0","priority":"Regular","provider":"Microsoft.Compute","publisher":"canonical",` +
		`"resourceGroupName":"macikgo-test-may-23","resourceId":"/subscriptions/xxxxxxxx-xxxxx-xxx-xxx-xxxx/resourceGroups/macikgo-test-may-23/providers/Microsoft.Compute/virtualMachines/examplevmname",` +
		`"sku":"20_04-lts-gen2","subscriptionId":"xxxxxxxx-xxxxx-xxx-xxx-xxxx","tags":"azsecpack:nonprod;platformsettings.host_environment.service.platform_optedin_for_rootcerts:true",` +
		`"version":"20.04.202201180","vmId":"02aab8a4-74ef-476e-8182-f6d2ba4166a6","vmScaleSetName":"crpteste9vflji9",` +
		`"vmSize":"Standard_A3","zone":"1"},"network":{"interface":[{"ipv4":{"ipAddress":[{"privateIpAddress":"10.144.133.132","publicIpAddress":""}],` +
		`"subnet":[{"address":"10.144.133.128","prefix":"26"}]},"ipv6":{"ipAddress":[]},"macAddress":"0011AAFFBB22"}]}}`))
	f.Add([]byte(`{"Compute":{"VMSize":"Standard_E4s_v3","Location":"eastus","Zone":"","Priority":"Low","VmId":"abc"}}`))
	f.Add([]byte(`{"network":{}}`))
	f.Add([]byte(`{"compute":null}`))
	// encoding/json matches keys without regard to case.
	f.Add([]byte(`{"Compute":{"loCAtion":"westeurope","nAme":"vm","zOne":"2","PRIORITY":"Spot"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := parseAzureInstance(body)
		if err != nil {
			if c != (azureCompute{}) {
				t.Fatalf("%+v with error %v", c, err)
			}
			return
		}
		again, err := json.Marshal(map[string]azureCompute{"compute": c})
		if err != nil {
			t.Fatal(err)
		}
		if c2, err := parseAzureInstance(again); err != nil || c2 != c {
			t.Fatalf("round trip of %+v gave %+v, %v", c, c2, err)
		}
		inst := azureInstance(c)
		if inst.Provider != ProviderAzure {
			t.Fatalf("provider %q", inst.Provider)
		}
		if inst.Zone != c.Zone && (inst.Zone != c.Location+"-"+c.Zone ||
			c.Location == "" || c.Zone == "" || strings.Trim(c.Zone, "0123456789") != "") {
			t.Fatalf("zone %q from location %q, zone %q", inst.Zone, c.Location, c.Zone)
		}
		checkInstance(t, inst.clean())
	})
}

// FuzzParseAzureScheduledEvents: an error, or one notice per kind in a
// fixed order, a time only on a pending one; and knowing the VM's name
// only ever removes events (pending with a name ⇒ pending without, and
// the earliest time without a name is no later).
func FuzzParseAzureScheduledEvents(f *testing.F) {
	f.Add([]byte(cloudtest.AzureNoEvents), "vm1")
	f.Add([]byte(cloudtest.AzurePreemptEvents("aks-spot-12345678-vmss_3", "Mon, 19 Sep 2016 18:29:47 GMT")), "aks-spot-12345678-vmss_3")
	f.Add([]byte(cloudtest.AzurePreemptEvents("vm2", "Mon, 19 Sep 2016 18:29:47 GMT")), "vm1")
	// The documented example document.
	f.Add([]byte(`{"DocumentIncarnation":1,"Events":[{"EventId":"f020ba2e-3bc0-4c40-a10b-86575a15cd6f","EventType":"Reboot",`+
		`"ResourceType":"VirtualMachine","Resources":["myVM"],"EventStatus":"Scheduled","NotBefore":"Mon, 11 Apr 2022 22:26:58 GMT",`+
		`"Description":"Virtual machine is being paused because of a memory-preserving Live Migration operation.",`+
		`"EventSource":"Platform","DurationInSeconds":5}]}`), "myvm")
	f.Add([]byte(`{"DocumentIncarnation":3,"Events":[
		{"EventType":"Reboot","EventStatus":"Scheduled","Resources":["vm1"],"NotBefore":"Mon, 19 Sep 2016 18:29:47 GMT"},
		{"EventType":"Terminate","EventStatus":"Started","Resources":[],"NotBefore":""},
		{"EventType":"Redeploy","EventStatus":"Scheduled","Resources":["vm1","vm2"],"NotBefore":"Mon, 19 Sep 2016 17:00:00 GMT"},
		{"EventType":"Freeze","EventStatus":"Canceled","Resources":["vm1"],"NotBefore":""}]}`), "VM1")
	f.Add([]byte(`{`), "")
	f.Add([]byte(`{"Events":[{"EventTYpe":"ReBoot","ResourCes":["0"]}]}`), "\x81") // key case; a name that is not UTF-8
	f.Fuzz(func(t *testing.T, body []byte, vmName string) {
		named, err := parseAzureScheduledEvents(body, vmName)
		if err != nil {
			if named != nil {
				t.Fatalf("notices %+v with error %v", named, err)
			}
			return
		}
		anyVM, err := parseAzureScheduledEvents(body, "")
		if err != nil {
			t.Fatalf("accepted with name %q, refused without: %v", vmName, err)
		}
		kinds := []string{EventPreemption, EventTermination, EventMaintenance}
		for _, ns := range [][]Notice{named, anyVM} {
			if len(ns) != len(kinds) {
				t.Fatalf("%d notices: %+v", len(ns), ns)
			}
			for i, n := range ns {
				if n.Event != kinds[i] {
					t.Fatalf("notice %d is %q, want %q", i, n.Event, kinds[i])
				}
				if !n.Pending && !n.Time.IsZero() {
					t.Fatalf("time on a notice not pending: %+v", n)
				}
			}
		}
		for i := range kinds {
			n, a := named[i], anyVM[i]
			if n.Pending && !a.Pending {
				t.Fatalf("%s pending for %q but not for any VM", kinds[i], vmName)
			}
			if !n.Time.IsZero() && (a.Time.IsZero() || a.Time.After(n.Time)) {
				t.Fatalf("%s: time %v for %q, %v for any VM", kinds[i], n.Time, vmName, a.Time)
			}
		}
	})
}

// realNode is a Node as GET /api/v1/nodes/{name} returns it on EKS
// (trimmed: images, conditions).
const realNode = `{"kind":"Node","apiVersion":"v1","metadata":{"name":"ip-192-168-12-34.eu-west-1.compute.internal",` +
	`"uid":"6f1c2b43-8a1e-4e5b-9c7d-0f2a1b3c4d5e","resourceVersion":"123456","creationTimestamp":"2024-05-01T10:00:00Z",` +
	`"labels":{"beta.kubernetes.io/arch":"amd64","beta.kubernetes.io/instance-type":"r6i.2xlarge","beta.kubernetes.io/os":"linux",` +
	`"eks.amazonaws.com/capacityType":"SPOT","eks.amazonaws.com/nodegroup":"spark-spot","eks.amazonaws.com/nodegroup-image":"ami-0abcdef1234567890",` +
	`"failure-domain.beta.kubernetes.io/region":"eu-west-1","failure-domain.beta.kubernetes.io/zone":"eu-west-1b",` +
	`"kubernetes.io/arch":"amd64","kubernetes.io/hostname":"ip-192-168-12-34.eu-west-1.compute.internal","kubernetes.io/os":"linux",` +
	`"node.kubernetes.io/instance-type":"r6i.2xlarge","topology.kubernetes.io/region":"eu-west-1","topology.kubernetes.io/zone":"eu-west-1b"},` +
	`"annotations":{"alpha.kubernetes.io/provided-node-ip":"192.168.12.34","node.alpha.kubernetes.io/ttl":"0"}},` +
	`"spec":{"providerID":"aws:///eu-west-1b/i-0a1b2c3d4e5f60718","taints":[{"key":"spot","value":"true","effect":"NoSchedule"}]},` +
	`"status":{"capacity":{"cpu":"8","memory":"65023596Ki","pods":"58"},"nodeInfo":{"kubeletVersion":"v1.29.3-eks-ae9a62a",` +
	`"containerRuntimeVersion":"containerd://1.7.11","architecture":"amd64","operatingSystem":"linux"},` +
	`"addresses":[{"type":"InternalIP","address":"192.168.12.34"},{"type":"Hostname","address":"ip-192-168-12-34.eu-west-1.compute.internal"}]}}`

// FuzzParseKubeNode: a node or an error; an accepted node survives a JSON
// round trip, and what is made of it (instance, exported labels) holds the
// promises of instanceFromNode and NodeLabelPairs.
func FuzzParseKubeNode(f *testing.F) {
	for _, n := range []string{realNode, karpenterNode, eksNode, gkeSpotNode, aksSpotNode, aksRegularNode} {
		f.Add([]byte(n))
	}
	f.Add([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nodes \"x\" not found","reason":"NotFound","code":404}`))
	f.Add([]byte(`{"metadata":{"labels":null},"spec":{"providerID":"gce://p/z/n"}}`))
	f.Add([]byte(`{"metAdAtA":{"nAme":"n","labels":{"":"","a b":" x "}},"SPEC":{"providerid":"aws:///"}}`))
	f.Add([]byte(`-1`))
	f.Fuzz(func(t *testing.T, body []byte) {
		node, err := parseKubeNode(body)
		if err != nil {
			if !reflect.DeepEqual(node, kubeNode{}) {
				t.Fatalf("%+v with error %v", node, err)
			}
			return
		}
		var doc kubeNodeDoc
		doc.Kind = "Node"
		doc.Metadata.Name, doc.Metadata.Labels, doc.Spec.ProviderID = node.Name, node.Labels, node.ProviderID
		again, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if n2, err := parseKubeNode(again); err != nil || !reflect.DeepEqual(n2, node) {
			t.Fatalf("round trip of %+v gave %+v, %v", node, n2, err)
		}

		inst := instanceFromNode(node)
		if inst.Provider != "" && !slices.Contains(Providers, inst.Provider) {
			t.Fatalf("provider %q", inst.Provider)
		}
		if inst.InstanceID != "" && (inst.Provider != ProviderAWS || !strings.HasPrefix(inst.InstanceID, "i-") || strings.Contains(inst.InstanceID, "/")) {
			t.Fatalf("instance id %q from provider id %q", inst.InstanceID, node.ProviderID)
		}
		if !slices.Contains([]string{"kubernetes", "eks", "gke", "aks"}, inst.Platform) {
			t.Fatalf("platform %q", inst.Platform)
		}
		checkInstance(t, inst.clean())

		allowed := allowedNodeLabels(node.Labels, []string{"*"})
		if len(allowed) != len(node.Labels) {
			t.Fatalf("allowlist * kept %d of %d labels", len(allowed), len(node.Labels))
		}
		checkLabelPairs(t, allowed)
	})
}
