output "sqs_endpoint_url" {
  description = "The SQS endpoint (the function's run.app URL): AWS_ENDPOINT_URL_SQS, or --endpoint-url of the AWS CLI."
  value       = module.function.uri
}

output "maintenance_url" {
  description = "What the scheduler job calls every minute (POST, with the bearer token)."
  value       = module.maintenance.uri
}

output "function_name" {
  description = "The function."
  value       = module.function.name
}

output "service_account_email" {
  description = "The service account the function runs as."
  value       = google_service_account.sluice.email
}

output "store_url" {
  description = "SLUICE_STORE as the function has it."
  value       = module.store.store_url
}

output "secret_ids" {
  description = "The Secret Manager secrets: the access keys, the maintenance token."
  value = {
    access_keys       = local.secret_keys
    maintenance_token = local.secret_token
  }
}

output "function_config" {
  description = "What the function runs with (build, scaling, service account, env names and the secrets they come from); holds no secret value."
  value       = module.function.config
}
