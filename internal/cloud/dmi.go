package cloud

import (
	"os"
	"path/filepath"
	"strings"
)

// azureChassisAssetTag is the chassis asset tag Hyper-V sets on every Azure
// VM; a Hyper-V VM elsewhere also says "Microsoft Corporation", so the
// vendor alone is not enough.
const azureChassisAssetTag = "7783-7084-3265-9085-8269-3286-77"

// dmiFiles are the files of /sys/class/dmi/id read for detection. They are
// world-readable (unlike product_serial or product_uuid), so detection
// works without root.
var dmiFiles = []string{"sys_vendor", "board_vendor", "product_name", "product_version",
	"bios_vendor", "bios_version", "chassis_asset_tag", "chassis_vendor", "board_asset_tag"}

// DMI holds the identification strings of the firmware, keyed by file name.
type DMI map[string]string

// ReadDMI reads the DMI identification strings under sysfs. Missing files
// (no DMI on this architecture, a container without /sys) are left out:
// that is "not a cloud we know", not an error.
func ReadDMI(sysfs string) DMI {
	dmi := DMI{}
	for _, name := range dmiFiles {
		data, err := os.ReadFile(filepath.Join(sysfs, "class", "dmi", "id", name))
		if err != nil {
			continue
		}
		if len(data) > MaxLabelValueBytes*4 {
			data = data[:MaxLabelValueBytes*4]
		}
		dmi[name] = strings.TrimSpace(string(data))
	}
	return dmi
}

// DetectProvider names the cloud the DMI strings identify, or ProviderNone.
// It is pure so each cloud's strings can be table-tested.
func DetectProvider(dmi DMI) string {
	has := func(file, want string) bool {
		return strings.Contains(strings.ToLower(dmi[file]), strings.ToLower(want))
	}
	switch {
	// Nitro instances say "Amazon EC2"; older Xen instances only carry
	// "amazon" in their BIOS / product version ("4.11.amazon").
	case has("sys_vendor", "Amazon EC2"), has("board_vendor", "Amazon EC2"),
		has("bios_version", "amazon"), has("product_version", "amazon"):
		return ProviderAWS
	case has("product_name", "Google Compute Engine"), has("sys_vendor", "Google"):
		return ProviderGCP
	case dmi["chassis_asset_tag"] == azureChassisAssetTag:
		return ProviderAzure
	case has("chassis_asset_tag", "OracleCloud.com"):
		return ProviderOracle
	case has("sys_vendor", "Alibaba Cloud"), has("product_name", "Alibaba Cloud ECS"):
		return ProviderAlibaba
	case has("sys_vendor", "DigitalOcean"):
		return ProviderDigitalOcean
	case has("sys_vendor", "Hetzner"):
		return ProviderHetzner
	}
	return ProviderNone
}

// instanceFromDMI returns what the firmware alone says about the instance.
// On AWS Nitro the product name is the instance type and the board asset
// tag the instance id, which keeps the info metric useful when IMDS cannot
// be reached (hop limit 1 in a pod, IMDS disabled).
func instanceFromDMI(provider string, dmi DMI) Instance {
	inst := Instance{Provider: provider, Lifecycle: LifecycleUnknown}
	if provider == ProviderAWS && strings.Contains(dmi["sys_vendor"], "Amazon EC2") {
		if pn := dmi["product_name"]; strings.Contains(pn, ".") {
			inst.InstanceType = pn
		}
		if tag := dmi["board_asset_tag"]; strings.HasPrefix(tag, "i-") {
			inst.InstanceID = tag
		}
	}
	return inst
}
