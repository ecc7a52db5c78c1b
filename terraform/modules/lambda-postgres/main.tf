# sluice as an AWS Lambda function behind a function URL, on Aurora
# PostgreSQL Serverless v2 (0 ACUs when idle by default) in a VPC of its
# own. EventBridge Scheduler invokes the function with a scheduled event
# every minute, which runs one maintenance pass (no token needed: the
# invocation is authorised by IAM).
#
# Secrets: the store URL (with the password) and the access keys are kept
# in Secrets Manager, and reach the function as environment variables
# encrypted with a key of this deployment: the Lambda entry point reads its
# settings from the environment only.

data "aws_region" "current" {}

data "aws_availability_zones" "available" {
  state = "available"
}

locals {
  azs = slice(data.aws_availability_zones.available.names, 0, 2)
  store_url = format("postgres://%s:%s@%s:5432/%s?sslmode=require&pool_max_conns=%d",
  "sluice", urlencode(var.db_password), aws_rds_cluster.this.endpoint, "sluice", var.pool_max_conns)
  sqs_region = coalesce(var.sqs_region, data.aws_region.current.region)
}

# ---- network: two private subnets, no internet route.

resource "aws_vpc" "this" {
  cidr_block           = var.vpc_cidr
  enable_dns_support   = true
  enable_dns_hostnames = true
  tags                 = { Name = var.name }
}

resource "aws_subnet" "private" {
  count = 2

  vpc_id            = aws_vpc.this.id
  availability_zone = local.azs[count.index]
  cidr_block        = cidrsubnet(var.vpc_cidr, 4, count.index)
  tags              = { Name = "${var.name}-private-${count.index}" }
}

resource "aws_security_group" "function" {
  name        = "${var.name}-function"
  description = "sluice function: out to the database only"
  vpc_id      = aws_vpc.this.id
}

resource "aws_security_group" "database" {
  name        = "${var.name}-database"
  description = "sluice database: PostgreSQL from the function only"
  vpc_id      = aws_vpc.this.id
}

resource "aws_vpc_security_group_egress_rule" "function_to_database" {
  security_group_id            = aws_security_group.function.id
  referenced_security_group_id = aws_security_group.database.id
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
}

resource "aws_vpc_security_group_ingress_rule" "database_from_function" {
  security_group_id            = aws_security_group.database.id
  referenced_security_group_id = aws_security_group.function.id
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
}

# ---- database.

resource "aws_db_subnet_group" "this" {
  name       = var.name
  subnet_ids = aws_subnet.private[*].id
}

resource "aws_rds_cluster" "this" {
  cluster_identifier        = var.name
  engine                    = "aurora-postgresql"
  engine_mode               = "provisioned"
  engine_version            = var.db_engine_version
  database_name             = "sluice"
  master_username           = "sluice"
  master_password           = var.db_password
  db_subnet_group_name      = aws_db_subnet_group.this.name
  vpc_security_group_ids    = [aws_security_group.database.id]
  storage_encrypted         = true
  deletion_protection       = var.db_deletion_protection
  skip_final_snapshot       = !var.db_deletion_protection
  final_snapshot_identifier = var.db_deletion_protection ? "${var.name}-final" : null
  backup_retention_period   = 7

  serverlessv2_scaling_configuration {
    min_capacity             = var.db_min_capacity
    max_capacity             = var.db_max_capacity
    seconds_until_auto_pause = var.db_min_capacity == 0 ? var.db_seconds_until_auto_pause : null
  }
}

resource "aws_rds_cluster_instance" "writer" {
  identifier         = "${var.name}-1"
  cluster_identifier = aws_rds_cluster.this.id
  instance_class     = "db.serverless"
  engine             = aws_rds_cluster.this.engine
  engine_version     = aws_rds_cluster.this.engine_version
}

# ---- secrets.

resource "aws_kms_key" "this" {
  description             = "sluice ${var.name}: its secrets and the function's environment"
  enable_key_rotation     = true
  deletion_window_in_days = 7
}

resource "aws_secretsmanager_secret" "store" {
  name        = "${var.name}/store-url"
  description = "SLUICE_STORE of ${var.name} (PostgreSQL URL with the password)"
  kms_key_id  = aws_kms_key.this.arn
  # Deleted at once on destroy: both are made again from the variables,
  # and a name scheduled for deletion cannot be used by the next apply.
  recovery_window_in_days = 0
}

resource "aws_secretsmanager_secret_version" "store" {
  secret_id     = aws_secretsmanager_secret.store.id
  secret_string = local.store_url
}

resource "aws_secretsmanager_secret" "access_keys" {
  name        = "${var.name}/access-keys"
  description = "SLUICE_ACCESS_KEYS of ${var.name}"
  kms_key_id  = aws_kms_key.this.arn
  # Deleted at once on destroy: both are made again from the variables,
  # and a name scheduled for deletion cannot be used by the next apply.
  recovery_window_in_days = 0
}

resource "aws_secretsmanager_secret_version" "access_keys" {
  secret_id     = aws_secretsmanager_secret.access_keys.id
  secret_string = var.access_keys
}

# ---- function.

resource "aws_iam_role" "function" {
  name = "${var.name}-function"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "lambda.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
}

# Network interfaces in the VPC and logs: AWS's managed policy for exactly
# that, nothing more.
resource "aws_iam_role_policy_attachment" "vpc_access" {
  role       = aws_iam_role.function.name
  policy_arn = "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
}

resource "aws_cloudwatch_log_group" "function" {
  name              = "/aws/lambda/${var.name}"
  retention_in_days = var.log_retention_days
}

resource "aws_lambda_function" "this" {
  function_name                  = var.name
  role                           = aws_iam_role.function.arn
  runtime                        = "provided.al2023"
  architectures                  = ["arm64"]
  handler                        = "bootstrap"
  filename                       = var.lambda_zip
  source_code_hash               = filebase64sha256(var.lambda_zip)
  memory_size                    = var.memory_mb
  timeout                        = var.timeout_seconds
  reserved_concurrent_executions = var.reserved_concurrency
  kms_key_arn                    = aws_kms_key.this.arn

  vpc_config {
    subnet_ids         = aws_subnet.private[*].id
    security_group_ids = [aws_security_group.function.id]
  }

  environment {
    variables = {
      SLUICE_STORE       = aws_secretsmanager_secret_version.store.secret_string
      SLUICE_ACCESS_KEYS = aws_secretsmanager_secret_version.access_keys.secret_string
      SLUICE_REGION      = local.sqs_region
      SLUICE_LOG_FORMAT  = "json"
    }
  }

  depends_on = [aws_iam_role_policy_attachment.vpc_access, aws_cloudwatch_log_group.function, aws_rds_cluster_instance.writer]
}

# SigV4 decides who may call: the URL itself is open (IAM auth on the URL
# would want signatures of its own).
resource "aws_lambda_function_url" "this" {
  function_name      = aws_lambda_function.this.function_name
  authorization_type = "NONE"
}

# A function URL made since October 2025 also needs lambda:InvokeFunction
# for calls through it; the provider adds that statement itself from 6.29
# on (this module's README).
resource "aws_lambda_permission" "public_url" {
  statement_id           = "public-function-url"
  function_name          = aws_lambda_function.this.function_name
  action                 = "lambda:InvokeFunctionUrl"
  principal              = "*"
  function_url_auth_type = "NONE"
}

# ---- maintenance: a scheduled event every minute.

resource "aws_iam_role" "scheduler" {
  name = "${var.name}-scheduler"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "scheduler.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
}

resource "aws_iam_role_policy" "scheduler_invoke" {
  name = "invoke-${var.name}"
  role = aws_iam_role.scheduler.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect   = "Allow"
      Action   = "lambda:InvokeFunction"
      Resource = aws_lambda_function.this.arn
    }]
  })
}

resource "aws_scheduler_schedule" "maintain" {
  name                = "${var.name}-maintain"
  description         = "sluice maintenance pass"
  schedule_expression = var.maintenance_schedule

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = aws_lambda_function.this.arn
    role_arn = aws_iam_role.scheduler.arn
    # The shape of an EventBridge rule's scheduled event, which the
    # function answers with one maintenance pass.
    input = jsonencode({
      source        = "aws.events"
      "detail-type" = "Scheduled Event"
      detail        = {}
    })

    retry_policy {
      maximum_retry_attempts = 0
    }
  }
}
