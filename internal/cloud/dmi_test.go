package cloud

import (
	"path/filepath"
	"testing"

	"github.com/executor-exporter/executor_exporter/internal/cloud/cloudtest"
)

func TestCloudDetectProvider(t *testing.T) {
	for _, tc := range []struct {
		name string
		dmi  map[string]string
		want string
	}{
		{"aws nitro", map[string]string{"sys_vendor": "Amazon EC2", "product_name": "m5.xlarge", "board_vendor": "Amazon EC2"}, ProviderAWS},
		{"aws xen", map[string]string{"sys_vendor": "Xen", "product_name": "HVM domU", "bios_version": "4.11.amazon"}, ProviderAWS},
		{"gcp", map[string]string{"sys_vendor": "Google", "product_name": "Google Compute Engine"}, ProviderGCP},
		{"azure", map[string]string{"sys_vendor": "Microsoft Corporation", "product_name": "Virtual Machine", "chassis_asset_tag": azureChassisAssetTag}, ProviderAzure},
		{"hyper-v outside azure", map[string]string{"sys_vendor": "Microsoft Corporation", "product_name": "Virtual Machine", "chassis_asset_tag": "0000-0000"}, ProviderNone},
		{"oracle", map[string]string{"sys_vendor": "QEMU", "chassis_asset_tag": "OracleCloud.com"}, ProviderOracle},
		{"alibaba", map[string]string{"sys_vendor": "Alibaba Cloud", "product_name": "Alibaba Cloud ECS"}, ProviderAlibaba},
		{"digitalocean", map[string]string{"sys_vendor": "DigitalOcean", "product_name": "Droplet"}, ProviderDigitalOcean},
		{"hetzner", map[string]string{"sys_vendor": "Hetzner", "product_name": "vServer"}, ProviderHetzner},
		{"qemu laptop vm", map[string]string{"sys_vendor": "QEMU", "product_name": "Standard PC (Q35 + ICH9, 2009)"}, ProviderNone},
		{"no dmi at all", map[string]string{}, ProviderNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dmi := ReadDMI(cloudtest.SysfsWithDMI(t, tc.dmi))
			if got := DetectProvider(dmi); got != tc.want {
				t.Errorf("DetectProvider(%v) = %q, want %q", dmi, got, tc.want)
			}
		})
	}
}

func TestCloudReadDMIWithoutSysfs(t *testing.T) {
	if dmi := ReadDMI(filepath.Join(t.TempDir(), "nonexistent")); len(dmi) != 0 {
		t.Fatalf("ReadDMI of a missing tree = %v, want empty", dmi)
	}
}

func TestCloudInstanceFromDMIOnNitro(t *testing.T) {
	dmi := DMI{"sys_vendor": "Amazon EC2", "product_name": "c6i.2xlarge", "board_asset_tag": "i-0fedcba9876543210"}
	got := instanceFromDMI(ProviderAWS, dmi)
	if got.InstanceType != "c6i.2xlarge" || got.InstanceID != "i-0fedcba9876543210" {
		t.Fatalf("instanceFromDMI = %+v", got)
	}
	if got := instanceFromDMI(ProviderGCP, DMI{"product_name": "Google Compute Engine"}); got.InstanceType != "" {
		t.Fatalf("GCP product name taken for an instance type: %+v", got)
	}
}
