output "uri" {
  description = "The service's URL (https://NAME-....run.app), without a trailing slash."
  value       = trimsuffix(google_cloud_run_v2_service.this.uri, "/")
}

output "name" {
  description = "The service's name."
  value       = google_cloud_run_v2_service.this.name
}

output "config" {
  description = "What the revision runs with, as planned: scaling, service account, plain env (name => value) and env from Secret Manager (name => secret ID). For inspection and the tests; holds no secret value."
  value = {
    min_instances   = google_cloud_run_v2_service.this.template[0].scaling[0].min_instance_count
    max_instances   = google_cloud_run_v2_service.this.template[0].scaling[0].max_instance_count
    concurrency     = google_cloud_run_v2_service.this.template[0].max_instance_request_concurrency
    service_account = google_cloud_run_v2_service.this.template[0].service_account
    plain_env = {
      for e in google_cloud_run_v2_service.this.template[0].containers[0].env : e.name => e.value
      if length(e.value_source) == 0
    }
    secret_env = {
      for e in google_cloud_run_v2_service.this.template[0].containers[0].env : e.name => e.value_source[0].secret_key_ref[0].secret
      if length(e.value_source) > 0
    }
  }
}
