# Mistake: member block "pool-a" has registry port 70000, above the
# largest TCP port.
# poolc reports that the registry port must be an integer from 1 to
# 65535.
pool "lab" {
  pod_pool "harness" {
    image = "lab-harness"

    member "pool-a" {
      ssh_host = "node-a"
      capacity = 4
      registry = "k3d-lab-registry:70000"
    }
  }
}
