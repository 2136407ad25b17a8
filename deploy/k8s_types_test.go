package deploy

// The parts of the Kubernetes and prometheus-operator API objects that the
// manifests use, named as in the API reference. Documents are decoded
// strictly into them, so a misspelt field (readOnlyRootFileSystem, say)
// fails the test instead of being dropped by the API server. A field added
// to a manifest must be added here too, which is the point: it gets looked
// up once.

type objectMeta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type typeMeta struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type daemonSet struct {
	typeMeta `yaml:",inline"`
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		Selector       labelSelector `yaml:"selector"`
		UpdateStrategy struct {
			Type          string `yaml:"type"`
			RollingUpdate struct {
				MaxUnavailable string `yaml:"maxUnavailable"`
			} `yaml:"rollingUpdate"`
		} `yaml:"updateStrategy"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     podSpec    `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	ServiceAccountName           string            `yaml:"serviceAccountName"`
	AutomountServiceAccountToken *bool             `yaml:"automountServiceAccountToken"`
	HostPID                      bool              `yaml:"hostPID"`
	HostNetwork                  bool              `yaml:"hostNetwork"`
	DNSPolicy                    string            `yaml:"dnsPolicy"`
	PriorityClassName            string            `yaml:"priorityClassName"`
	NodeSelector                 map[string]string `yaml:"nodeSelector"`
	Tolerations                  []struct {
		Key      string `yaml:"key"`
		Operator string `yaml:"operator"`
		Effect   string `yaml:"effect"`
	} `yaml:"tolerations"`
	SecurityContext struct {
		SeccompProfile struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []struct {
		Name     string `yaml:"name"`
		HostPath *struct {
			Path string `yaml:"path"`
			Type string `yaml:"type"`
		} `yaml:"hostPath"`
		Secret *struct {
			SecretName string `yaml:"secretName"`
		} `yaml:"secret"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
	} `yaml:"volumes"`
}

type container struct {
	Name            string   `yaml:"name"`
	Image           string   `yaml:"image"`
	ImagePullPolicy string   `yaml:"imagePullPolicy"`
	Args            []string `yaml:"args"`
	Env             []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			FieldRef struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
		Protocol      string `yaml:"protocol"`
	} `yaml:"ports"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		RunAsUser                *int64 `yaml:"runAsUser"`
		RunAsGroup               *int64 `yaml:"runAsGroup"`
		RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
		Privileged               *bool  `yaml:"privileged"`
		AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
			Add  []string `yaml:"add"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name             string `yaml:"name"`
		MountPath        string `yaml:"mountPath"`
		ReadOnly         bool   `yaml:"readOnly"`
		MountPropagation string `yaml:"mountPropagation"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet struct {
		Path   string `yaml:"path"`
		Port   string `yaml:"port"`
		Scheme string `yaml:"scheme"`
	} `yaml:"httpGet"`
	TCPSocket *struct {
		Port string `yaml:"port"`
	} `yaml:"tcpSocket"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
}

type service struct {
	typeMeta `yaml:",inline"`
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		ClusterIP string            `yaml:"clusterIP"`
		Selector  map[string]string `yaml:"selector"`
		Ports     []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
			Protocol   string `yaml:"protocol"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type policyRule struct {
	APIGroups       []string `yaml:"apiGroups"`
	Resources       []string `yaml:"resources"`
	Verbs           []string `yaml:"verbs"`
	ResourceNames   []string `yaml:"resourceNames"`
	NonResourceURLs []string `yaml:"nonResourceURLs"`
}

type clusterRole struct {
	typeMeta `yaml:",inline"`
	Metadata objectMeta   `yaml:"metadata"`
	Rules    []policyRule `yaml:"rules"`
}

type clusterRoleBinding struct {
	typeMeta `yaml:",inline"`
	Metadata objectMeta `yaml:"metadata"`
	RoleRef  struct {
		APIGroup string `yaml:"apiGroup"`
		Kind     string `yaml:"kind"`
		Name     string `yaml:"name"`
	} `yaml:"roleRef"`
	Subjects []struct {
		Kind      string `yaml:"kind"`
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"subjects"`
}

type configMap struct {
	typeMeta `yaml:",inline"`
	Metadata objectMeta        `yaml:"metadata"`
	Data     map[string]string `yaml:"data"`
}

type plainObject struct {
	typeMeta `yaml:",inline"`
	Metadata objectMeta `yaml:"metadata"`
}

type relabeling struct {
	Action       string   `yaml:"action"`
	SourceLabels []string `yaml:"sourceLabels"`
	TargetLabel  string   `yaml:"targetLabel"`
	Replacement  string   `yaml:"replacement"`
	Regex        string   `yaml:"regex"`
}

type scrapeEndpoint struct {
	Port              string                 `yaml:"port"`
	Scheme            string                 `yaml:"scheme"`
	Interval          string                 `yaml:"interval"`
	ScrapeTimeout     string                 `yaml:"scrapeTimeout"`
	TLSConfig         map[string]interface{} `yaml:"tlsConfig"`
	BasicAuth         map[string]interface{} `yaml:"basicAuth"`
	Relabelings       []relabeling           `yaml:"relabelings"`
	MetricRelabelings []relabeling           `yaml:"metricRelabelings"`
}

type monitorSpec struct {
	Selector          labelSelector `yaml:"selector"`
	NamespaceSelector struct {
		MatchNames []string `yaml:"matchNames"`
	} `yaml:"namespaceSelector"`
	Endpoints           []scrapeEndpoint `yaml:"endpoints"`
	PodMetricsEndpoints []scrapeEndpoint `yaml:"podMetricsEndpoints"`
}

type serviceMonitor struct {
	typeMeta `yaml:",inline"`
	Metadata objectMeta  `yaml:"metadata"`
	Spec     monitorSpec `yaml:"spec"`
}

// ruleGroup is a Prometheus rule group; its rules are checked by promtool.
type ruleGroup struct {
	Name     string                   `yaml:"name"`
	Interval string                   `yaml:"interval,omitempty"`
	Rules    []map[string]interface{} `yaml:"rules"`
}

type prometheusRule struct {
	typeMeta `yaml:",inline"`
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		Groups []ruleGroup `yaml:"groups"`
	} `yaml:"spec"`
}
