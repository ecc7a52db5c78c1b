output "sqs_endpoint_url" {
  description = "export AWS_ENDPOINT_URL_SQS=$(tofu output -raw sqs_endpoint_url)"
  value       = module.sluice.sqs_endpoint_url
}
