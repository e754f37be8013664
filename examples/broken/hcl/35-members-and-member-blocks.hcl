# Mistake: pod pool "harness" gives its members twice: as the compact
# members string and as member blocks. poolc cannot tell which wins.
# poolc reports: use either members or member blocks, not both.
pool "lab" {
  pod_pool "harness" {
    image   = "lab-harness"
    members = "pool-a@node-a:4"

    member "pool-b" {
      ssh_host = "node-b"
    }
  }
}
