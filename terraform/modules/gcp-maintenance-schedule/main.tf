# Where nothing runs between requests (Cloud Run with CPU only during
# requests, scaled to zero), a scheduler does the work no request does:
# sluice answers POST /_sluice/maintain with {"took_ms":...} once a
# bounded pass is done. Cloud Scheduler cannot sign SigV4 or read Secret
# Manager, so the token is in the job's header; anyone who may read the
# job (cloudscheduler.jobs.get) can read it.

resource "google_cloud_scheduler_job" "this" {
  project          = var.project_id
  region           = var.region
  name             = var.name
  description      = "sluice maintenance pass (POST /_sluice/maintain)"
  schedule         = var.schedule
  time_zone        = var.time_zone
  attempt_deadline = "60s"

  # A missed pass is made good by the next one a minute later.
  retry_config {
    retry_count = 0
  }

  http_target {
    uri         = "${trimsuffix(var.endpoint_url, "/")}/_sluice/maintain"
    http_method = "POST"
    headers = {
      Authorization = "Bearer ${var.token}"
    }
  }
}
