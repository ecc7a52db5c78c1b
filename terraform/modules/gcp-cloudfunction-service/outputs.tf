output "uri" {
  description = "The function's run.app URL, without a trailing slash: it has no path, so SDKs can take it as an endpoint (the cloudfunctions.net URL ends in /NAME)."
  value       = trimsuffix(google_cloudfunctions2_function.this.service_config[0].uri, "/")
}

output "name" {
  description = "The function's name."
  value       = google_cloudfunctions2_function.this.name
}

output "config" {
  description = "What the function runs with, as planned: build, scaling, service account, plain env (name => value), env from Secret Manager (name => secret ID), VPC connector. For inspection and the tests; holds no secret value."
  value = {
    entry_point     = google_cloudfunctions2_function.this.build_config[0].entry_point
    go_version      = google_cloudfunctions2_function.this.build_config[0].environment_variables["GOOGLE_GO_VERSION"]
    min_instances   = google_cloudfunctions2_function.this.service_config[0].min_instance_count
    concurrency     = google_cloudfunctions2_function.this.service_config[0].max_instance_request_concurrency
    cpu             = google_cloudfunctions2_function.this.service_config[0].available_cpu
    service_account = google_cloudfunctions2_function.this.service_config[0].service_account_email
    vpc_connector   = var.vpc_connector
    plain_env       = google_cloudfunctions2_function.this.service_config[0].environment_variables
    secret_env      = { for s in google_cloudfunctions2_function.this.service_config[0].secret_environment_variables : s.key => s.secret }
  }
}

output "source_bucket" {
  description = "The private bucket the function's source zip is uploaded to."
  value       = google_storage_bucket.source.name
}
