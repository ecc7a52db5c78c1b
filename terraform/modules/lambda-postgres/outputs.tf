output "sqs_endpoint_url" {
  description = "The SQS endpoint (the function URL without its trailing slash): AWS_ENDPOINT_URL_SQS, or --endpoint-url of the AWS CLI."
  value       = trimsuffix(aws_lambda_function_url.this.function_url, "/")
}

output "function_name" {
  description = "The Lambda function."
  value       = aws_lambda_function.this.function_name
}

output "database_endpoint" {
  description = "The Aurora cluster's writer endpoint."
  value       = aws_rds_cluster.this.endpoint
}

output "secret_arns" {
  description = "The Secrets Manager secrets: the store URL and the access keys."
  value = {
    store       = aws_secretsmanager_secret.store.arn
    access_keys = aws_secretsmanager_secret.access_keys.arn
  }
}
